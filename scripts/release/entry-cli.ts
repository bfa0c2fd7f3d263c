// The single executable's entry for the envkeep CLI (no native addon; the build info only).
import './sea-addons.js'
import { buildCli } from '../../packages/cli/dist/cli.js'

buildCli()
  .run(process.argv.slice(2))
  .then(
    (code) => {
      process.exitCode = code
    },
    (e: unknown) => {
      process.stderr.write(`envkeep: ${e instanceof Error ? e.message : String(e)}\n`)
      process.exitCode = 1
    },
  )

// The single executable's entry for envkeep-server: the addon loader first, then the usual bin.
import './sea-addons.js'
import { runProcess } from '../../packages/server/dist/main.js'

runProcess().catch((e: unknown) => {
  process.stderr.write(`envkeep-server: ${e instanceof Error ? e.message : String(e)}\n`)
  process.exitCode = 1
})

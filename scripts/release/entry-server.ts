// The single executable's entry for envkeep-server: the addon loader first, then the usual bin.
import './sea-addons.js'
import { relaunchWithNodeDefaults } from '../../packages/server/dist/node-defaults.js'

// before the server's modules are evaluated: the process is replaced once when a Node default is missing
relaunchWithNodeDefaults()
import('../../packages/server/dist/main.js')
  .then(({ runProcess }) => runProcess())
  .catch((e: unknown) => {
    process.stderr.write(`envkeep-server: ${e instanceof Error ? e.message : String(e)}\n`)
    process.exitCode = 1
  })

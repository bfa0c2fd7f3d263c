import t from 'tap'
import { readFileSync } from 'node:fs'
import { spawnNode } from '@envkeep/test-support'
import { missingDefaults, NODE_DEFAULTS } from '../src/node-defaults.js'
import { BIN, freePort, newMasterKey, startServer, stopServer } from './ops-helpers.js'
import { tempDir } from './helpers.js'

// Issue 20, item 5: envkeep-server runs with --max-semi-space-size=16 unless its operator
// sets the flag (README, "Memory"); whatever the operator gives wins.

t.test('the defaults missing from the command line and NODE_OPTIONS', async (t) => {
  t.same(missingDefaults([], undefined), NODE_DEFAULTS)
  t.same(missingDefaults([], '--max-semi-space-size=64'), [], 'NODE_OPTIONS wins')
  t.same(missingDefaults([], '--expose-gc "--max-semi-space-size=64"'), [], 'quoted too')
  t.same(missingDefaults(['--max_semi_space_size=32'], ''), [], 'the command line wins, either spelling')
  t.same(missingDefaults(['--expose-gc'], '--max-old-space-size=512'), NODE_DEFAULTS, 'other flags are kept beside it')
})

/** NODE_OPTIONS of a running process, as the kernel has it. */
function nodeOptionsOf(pid: number): string | null {
  const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
  return env.find((e) => e.startsWith('NODE_OPTIONS='))?.slice('NODE_OPTIONS='.length) ?? null
}

t.test(
  'envkeep-server start runs with the default, in the same process, unless NODE_OPTIONS sets it',
  { skip: process.platform !== 'linux' && 'reads /proc' },
  async (t) => {
    const env = (port: number) => ({ ENVKEEP_DATA_DIR: tempDir(t), ENVKEEP_PORT: String(port), ENVKEEP_MASTER_KEY: newMasterKey() })
    const plain = await startServer(t, env(await freePort()))
    // (tap adds its own --import to NODE_OPTIONS of the processes a test starts)
    t.match(nodeOptionsOf(plain.child.pid as number), /^--max-semi-space-size=16( |$)/)
    t.equal(await stopServer(plain), 0, 'the process started is the one serving (SIGTERM reaches it)')

    const own = await startServer(t, { ...env(await freePort()), NODE_OPTIONS: '--max-semi-space-size=64' })
    const own_ = nodeOptionsOf(own.child.pid as number) ?? ''
    t.ok(own_.includes('--max-semi-space-size=64') && !own_.includes('=16'), "the operator's value is kept, alone")
    t.equal(await stopServer(own), 0)
  },
)

t.test('a short command runs as before', async (t) => {
  const help = spawnNode(BIN, ['--help'], { env: {} })
  const r = await help.done
  t.equal(r.code, 0)
  t.match(r.stdout, /Usage: envkeep-server/)
})

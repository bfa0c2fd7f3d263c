import t from 'tap'
import { readFileSync } from 'node:fs'
import { spawnNode } from '@envkeep/test-support'
import { ENV_DEFAULTS, missingDefaults, missingEnv, NODE_DEFAULTS } from '../src/node-defaults.js'
import { BIN, freePort, newMasterKey, startServer, stopServer } from './ops-helpers.js'
import { tempDir } from './helpers.js'

// Issue 20, item 5: envkeep-server runs with --max-semi-space-size=8 and (Linux)
// MALLOC_ARENA_MAX=1 and MALLOC_MMAP_THRESHOLD_=131072 unless its operator sets them (README, "Memory"); whatever the operator
// gives wins.

t.test('the environment defaults missing, on Linux only', async (t) => {
  t.same(missingEnv({}, 'linux'), { MALLOC_ARENA_MAX: '1', MALLOC_MMAP_THRESHOLD_: '131072' })
  t.same(missingEnv({ MALLOC_ARENA_MAX: '8' }, 'linux'), { MALLOC_MMAP_THRESHOLD_: '131072' }, "the operator's value wins, each on its own")
  t.same(missingEnv({ MALLOC_ARENA_MAX: '', MALLOC_MMAP_THRESHOLD_: '' }, 'linux'), {}, 'even empty')
  t.same(missingEnv({}, 'darwin'), {}, 'not glibc: nothing')
  t.same(Object.keys(ENV_DEFAULTS), ['MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_'])
})

t.test('the defaults missing from the command line and NODE_OPTIONS', async (t) => {
  t.same(missingDefaults([], undefined), NODE_DEFAULTS)
  t.same(missingDefaults([], '--max-semi-space-size=64'), [], 'NODE_OPTIONS wins')
  t.same(missingDefaults([], '--expose-gc "--max-semi-space-size=64"'), [], 'quoted too')
  t.same(missingDefaults(['--max_semi_space_size=32'], ''), [], 'the command line wins, either spelling')
  t.same(missingDefaults(['--expose-gc'], '--max-old-space-size=512'), NODE_DEFAULTS, 'other flags are kept beside it')
})

/** A variable of a running process's environment, as the kernel has it. */
function envOf(pid: number, name: string): string | null {
  const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
  return env.find((e) => e.startsWith(`${name}=`))?.slice(name.length + 1) ?? null
}
const nodeOptionsOf = (pid: number) => envOf(pid, 'NODE_OPTIONS')

t.test(
  'envkeep-server start runs with the defaults, in the same process, unless NODE_OPTIONS and the environment set them',
  { skip: process.platform !== 'linux' && 'reads /proc' },
  async (t) => {
    const env = (port: number) => ({ ENVKEEP_DATA_DIR: tempDir(t), ENVKEEP_PORT: String(port), ENVKEEP_MASTER_KEY: newMasterKey() })
    const plain = await startServer(t, env(await freePort()))
    // (tap adds its own --import to NODE_OPTIONS of the processes a test starts)
    t.match(nodeOptionsOf(plain.child.pid as number), /^--max-semi-space-size=8( |$)/)
    t.equal(envOf(plain.child.pid as number, 'MALLOC_ARENA_MAX'), '1', 'and the malloc defaults')
    t.equal(envOf(plain.child.pid as number, 'MALLOC_MMAP_THRESHOLD_'), '131072')
    t.equal(await stopServer(plain), 0, 'the process started is the one serving (SIGTERM reaches it)')

    const own = await startServer(t, { ...env(await freePort()), NODE_OPTIONS: '--max-semi-space-size=64', MALLOC_ARENA_MAX: '4' })
    const own_ = nodeOptionsOf(own.child.pid as number) ?? ''
    t.ok(own_.includes('--max-semi-space-size=64') && !own_.includes('--max-semi-space-size=8'), "the operator's value is kept, alone")
    t.equal(envOf(own.child.pid as number, 'MALLOC_ARENA_MAX'), '4', "the operator's malloc setting too")
    t.equal(await stopServer(own), 0)
  },
)

t.test('a short command runs as before', async (t) => {
  const help = spawnNode(BIN, ['--help'], { env: {} })
  const r = await help.done
  t.equal(r.code, 0)
  t.match(r.stdout, /Usage: envkeep-server/)
})

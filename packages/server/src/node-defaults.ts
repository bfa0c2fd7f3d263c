import { isSea } from 'node:sea'

/**
 * The Node flags envkeep-server runs with unless its operator sets their own (README, "Memory").
 *
 * `--max-semi-space-size=8`: V8 sizes the young generation from the machine's memory; on a
 * host with 16 GB or more it lets it grow to 2 × 64 MB, which a server answering large
 * environments fills and keeps resident. 8 MB semi-spaces, with the buffers of reads and
 * pushes freed at once (`crypto/wipe.ts`) and the vault list's answer made once per change
 * (`env-api-plugin` cache/held-lists.ts) and a push's sealed block freed once stored: the bench's
 * peak RSS through the whole run 139–160 MB on SQLite (highest at the 1 MiB push) and 144–222 MB on PostgreSQL in the
 * runs measured (16 MB: 163–164, 182–195). Before the list's answer was held, 8 MB gave 245–330
 * MB in most whole runs: the 1,000-vault list allocated ~1.3 MB a request, ten in flight were promoted
 * at every scavenge and the old generation grew to 80–100 MB (bench/README.md, "memory4").
 */
export const NODE_DEFAULTS: readonly string[] = ['--max-semi-space-size=8']

/**
 * Environment envkeep-server runs with unless its operator sets it (Linux only: glibc reads it
 * when the process starts, hence the relaunch). `MALLOC_ARENA_MAX=1`: glibc gives each thread
 * that allocates (V8's compiler and GC workers, libuv's pool) an arena of its own, up to eight
 * per core, and each keeps what it grew. One arena: the bench's peak RSS 158 → 142 MB (two:
 * 149–151), with no CPU difference measurable (the JavaScript runs on one thread; small
 * allocations go through each thread's cache without the arena's lock).
 * `MALLOC_MMAP_THRESHOLD_=131072`: every allocation of 128 KiB or more is mapped on its own and
 * given back when freed. By default glibc raises that threshold to the size of the largest
 * such block freed (up to 32 MiB), after which a large answer's buffers (a 1,000-vault list,
 * a 10,000-variable read) come from the heap, which then keeps them: through the bench's
 * cases in order, the peak RSS 323–330 → 168 MB (SQLite, bench/README.md "Last figures").
 */
export const ENV_DEFAULTS: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '1', MALLOC_MMAP_THRESHOLD_: '131072' }

/** What a flag sets, e.g. `--max-semi-space-size` of `--max-semi-space-size=16` (V8 also takes `_` for `-`). */
const flagName = (flag: string): string => (flag.split('=')[0] as string).replaceAll('_', '-')

/**
 * The flags of NODE_DEFAULTS that neither the command line (`execArgv`) nor `NODE_OPTIONS`
 * already sets: whatever the operator gives wins, so `NODE_OPTIONS=--max-semi-space-size=64`
 * restores V8's own sizing.
 */
export function missingDefaults(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  // NODE_OPTIONS may quote a flag ("--max-semi-space-size=64"), as tap does
  const options = (nodeOptions ?? '').match(/"[^"]*"|\S+/g)?.map((o) => o.replace(/^"(.*)"$/, '$1')) ?? []
  const given = new Set([...execArgv, ...options].filter((a) => a.startsWith('--')).map(flagName))
  return NODE_DEFAULTS.filter((f) => !given.has(flagName(f)))
}

/**
 * The variables of ENV_DEFAULTS the environment does not set (on Linux; elsewhere none): a
 * variable the operator set, even empty, is kept as it is.
 */
export function missingEnv(env: NodeJS.ProcessEnv, platform: NodeJS.Platform = process.platform): Record<string, string> {
  if (platform !== 'linux') return {}
  return Object.fromEntries(Object.entries(ENV_DEFAULTS).filter(([name]) => env[name] === undefined))
}

/**
 * Replaces this process (same pid, same open files: `process.execve`) by one that has the
 * missing defaults in its NODE_OPTIONS and its environment, before anything else is loaded;
 * the new process finds them there and goes on. Does nothing where `process.execve` is
 * missing (Windows, Node before 22.15) or when every default is set already.
 */
export function relaunchWithNodeDefaults(): void {
  const execve = (process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never }).execve
  if (typeof execve !== 'function' || process.platform === 'win32') return
  const missing = missingDefaults(process.execArgv, process.env.NODE_OPTIONS)
  const env = missingEnv(process.env)
  if (missing.length === 0 && Object.keys(env).length === 0) return
  const nodeOptions = [...missing, process.env.NODE_OPTIONS ?? ''].join(' ').trim()
  // the single executable takes every argument as its own (its argv[1] repeats its path); node takes its flags and the script
  const args = isSea() ? process.argv.slice(2) : [...process.execArgv, ...process.argv.slice(1)]
  execve.call(process, process.execPath, [process.execPath, ...args], {
    ...process.env,
    ...env,
    ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
  })
}

import { isSea } from 'node:sea'

/**
 * The Node flags envkeep-server runs with unless its operator sets their own (README, "Memory").
 *
 * `--max-semi-space-size=16`: V8 sizes the young generation from the machine's memory; on a
 * host with 16 GB or more it lets it grow to 2 × 64 MB, which a server answering large
 * environments fills and keeps resident. 16 MB semi-spaces (Node 18's ceiling) measured in the
 * bench: peak RSS through the whole run 389 → ~300 MB (SQLite); smaller ones (8, 4, 2) made the
 * peak worse again (more objects promoted to the old generation).
 */
export const NODE_DEFAULTS: readonly string[] = ['--max-semi-space-size=16']

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
 * Replaces this process (same pid, same open files: `process.execve`) by one that has the
 * missing defaults in its NODE_OPTIONS, before anything else is loaded; the new process finds
 * them there and goes on. Does nothing where `process.execve` is missing (Windows, Node before
 * 22.15) or when every default is set already.
 */
export function relaunchWithNodeDefaults(): void {
  const execve = (process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never }).execve
  if (typeof execve !== 'function' || process.platform === 'win32') return
  const missing = missingDefaults(process.execArgv, process.env.NODE_OPTIONS)
  if (missing.length === 0) return
  const nodeOptions = [...missing, process.env.NODE_OPTIONS ?? ''].join(' ').trim()
  // the single executable takes every argument as its own (its argv[1] repeats its path); node takes its flags and the script
  const args = isSea() ? process.argv.slice(2) : [...process.execArgv, ...process.argv.slice(1)]
  execve.call(process, process.execPath, [process.execPath, ...args], {
    ...process.env,
    NODE_OPTIONS: nodeOptions,
  })
}

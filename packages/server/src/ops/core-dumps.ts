import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'

export interface CoreDumpState {
  /** RLIMIT_CORE soft and hard limits as /proc/self/limits says after the attempt ('0' when off) */
  readonly limit: string | null
  /** whether /proc/self/coredump_filter is 0 (no memory mapping of this process is dumped) */
  readonly filterCleared: boolean
  /** what was done, in words for the log */
  readonly summary: string
}

function coreLimit(): string | null {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max core file size'))
    const parts = line?.trim().split(/\s{2,}/)
    return parts && parts.length >= 3 ? `${parts[1]}/${parts[2]}` : null
  } catch {
    return null
  }
}

/**
 * Keeps the master key and opened values out of core dumps. Node has no setrlimit, so:
 * 1. util-linux `prlimit --pid <own pid> --core=0:0` sets RLIMIT_CORE to 0 (soft and hard: it
 *    cannot be raised again without privilege) for this process; the kernel writes no core
 *    file, and systemd-coredump, which reads the limit of a crashing process, stores none.
 * 2. `/proc/self/coredump_filter` 0: should a dump happen anyway (prlimit missing, or a
 *    core_pattern pipe that ignores the limit), no memory mapping of the process (heap
 *    included) is written into it, only registers and headers.
 * Linux only; elsewhere it says it did nothing. Under systemd, the unit's LimitCORE=0 does (1)
 * before the process starts.
 */
export function disableCoreDumps(pid: number = process.pid): CoreDumpState {
  if (process.platform !== 'linux') return { limit: null, filterCleared: false, summary: 'not Linux: core dumps left as the system sets them' }
  let prlimit = 'prlimit not found (util-linux)'
  try {
    execFileSync('prlimit', ['--pid', String(pid), '--core=0:0'], { stdio: 'ignore', timeout: 5_000 })
    prlimit = 'RLIMIT_CORE 0 (prlimit)'
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') prlimit = 'prlimit failed'
  }
  let filterCleared = false
  try {
    writeFileSync('/proc/self/coredump_filter', '0')
    filterCleared = readFileSync('/proc/self/coredump_filter', 'utf8').trim().replace(/^0+/, '') === ''
  } catch {}
  const limit = coreLimit()
  const off = limit === '0/0'
  return {
    limit,
    filterCleared,
    summary: `core dumps ${off ? 'off' : 'not off'}: ${off ? 'RLIMIT_CORE 0' : prlimit}; ${filterCleared ? 'coredump_filter 0 (no memory would be dumped)' : 'coredump_filter unchanged'}`,
  }
}

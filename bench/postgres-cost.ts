/**
 * What a case costs the PostgreSQL server itself (BENCH_DATABASE=postgres, server on this
 * machine): the CPU of the backends serving the bench's database (from /proc, user + system)
 * and its committed transactions (pg_stat_database), each per answered request. A backend that
 * ends during the case is left out (a pool's idle connection). The WAL writer
 * and the checkpointer are shared by every database on the server and not counted; time spent
 * waiting for the disk is not CPU. Without /proc (another machine), CPU reads as 0.
 *
 * `pinTo` (the load generator's core, when the bench pins): before each case, the backends
 * serving the bench's database are pinned to that core with `taskset`. Linux places a backend
 * woken by the server's socket write on the waker's core, so without it PostgreSQL's work
 * lands on the core the envkeep server is pinned to, which the bare server has to itself.
 * Only those backends are pinned (they end when the bench drops its database); the
 * postmaster and every other database's backends are left alone.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import pg from 'pg'

export interface PostgresCost {
  /** backend CPU per request, µs */
  cpuUs: number
  /** committed transactions per request */
  commits: number
}

interface Sample {
  /** CPU ticks by backend pid */
  ticks: Map<number, number>
  commits: number
}

const TICK_US = 10_000 // USER_HZ is 100 on Linux

function backendTicks(pid: number): number {
  try {
    // fields after the command's closing parenthesis: state is 3rd, utime 14th, stime 15th
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return 0
  }
}

function pin(pid: number, core: number): void {
  try {
    execFileSync('taskset', ['-p', '-c', String(core), String(pid)], { stdio: 'ignore' })
  } catch {
    // a backend that ended meanwhile, or PostgreSQL on another machine: nothing to pin
  }
}

/** A probe on the database at `url`; `measure(requests, run)` runs `run` and returns its cost. */
export async function createPostgresCost(url: string, o: { readonly pinTo?: number } = {}) {
  const c = new pg.Client({ connectionString: url, application_name: 'envkeep-bench-probe' })
  await c.connect()
  // the backends serving the bench's database, the probe's own left out
  const backends = async (): Promise<number[]> =>
    (
      await c.query<{ pid: number }>(
        "select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'",
      )
    ).rows.map((r) => r.pid)
  const sample = async (): Promise<Sample> => {
    await c.query('select pg_stat_force_next_flush()')
    const db = await c.query<{ n: string }>('select xact_commit as n from pg_stat_database where datname = current_database()')
    const pids = await backends()
    return { ticks: new Map(pids.map((pid) => [pid, backendTicks(pid)])), commits: Number(db.rows[0]?.n ?? 0) }
  }
  const pinAll = (pids: Iterable<number>, core: number) => {
    for (const pid of pids) pin(pid, core)
  }
  return {
    async measure<T>(run: () => Promise<T>, requests: (r: T) => number): Promise<{ result: T; cost: PostgresCost }> {
      const a = await sample()
      const core = o.pinTo
      let again: NodeJS.Timeout | undefined
      if (core !== undefined) {
        pinAll(a.ticks.keys(), core)
        // and once more a second into the case (only the list of backends: the pool opens
        // connections as the load asks); the case's CPU and commits are sampled before and after
        again = setTimeout(
          () =>
            void backends().then(
              (pids) => pinAll(pids, core),
              () => {},
            ),
          1000,
        )
      }
      const result = await run().finally(() => clearTimeout(again))
      const b = await sample()
      const n = Math.max(1, requests(result))
      // per backend: a backend that ended meanwhile is not counted, one that started counts from 0
      let ticks = 0
      for (const [pid, t] of b.ticks) ticks += t - (a.ticks.get(pid) ?? 0)
      // the probe's own two looks commit a transaction each
      return { result, cost: { cpuUs: (ticks * TICK_US) / n, commits: Math.max(0, b.commits - a.commits - 2) / n } }
    },
    close: () => c.end(),
  }
}

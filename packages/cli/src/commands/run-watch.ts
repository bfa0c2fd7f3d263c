import { constants } from 'node:os'
import type { Context } from '../context.js'
import { CliError, usageError } from '../errors.js'
import { endAs, forwardSignals, startChild, startFailure, type Started } from './child.js'
import type { Target } from '../target.js'
import { NOT_MODIFIED, overriddenNotice, readEnvironment, type VariableSet } from './pull.js'

/**
 * `envkeep run --watch -- CMD` (issue 24, item 3): runs the command, checks
 * the environment every `--interval` seconds (at least 10, within the
 * server's 60 requests a minute) with the ETag of the last read
 * (If-None-Match: the server answers 304 without opening a value when
 * nothing changed), and restarts the command when a value it gets changed:
 * `--signal` (SIGTERM by default), then SIGKILL after `--grace` seconds. A
 * line names what changed, never a value. A check that fails keeps the
 * command running and says so once (and once more when checks work again).
 * The command ending on its own ends envkeep, with its exit code.
 */

export const MIN_INTERVAL_S = 10

export interface WatchOptions {
  readonly intervalS: number
  readonly signal: NodeJS.Signals
  readonly graceS: number
  /** what the command gets from a read: the environment to give it */
  readonly prepare: (set: VariableSet) => { env: Record<string, string>; secrets: string[] }
  readonly mask: boolean
  readonly command: string
  readonly args: readonly string[]
}

/** Parses --interval, --signal and --grace. */
export function watchSettings(values: Record<string, unknown>): { intervalS: number; signal: NodeJS.Signals; graceS: number } {
  const intervalS = values.interval === undefined ? MIN_INTERVAL_S : Number(values.interval)
  if (!Number.isFinite(intervalS) || intervalS < MIN_INTERVAL_S || intervalS > 86_400)
    throw usageError(`--interval takes seconds, at least ${MIN_INTERVAL_S} (checks stay within the server's rate limit)`)
  const graceS = values.grace === undefined ? 10 : Number(values.grace)
  if (!Number.isFinite(graceS) || graceS < 0 || graceS > 3600) throw usageError('--grace takes seconds, 0 to 3600')
  const name = typeof values.signal === 'string' ? values.signal.toUpperCase().replace(/^(?!SIG)/, 'SIG') : 'SIGTERM'
  if (!(name in constants.signals) || name === 'SIGKILL' || name === 'SIGSTOP')
    throw usageError(`--signal takes a signal name such as SIGTERM, SIGINT or SIGHUP`)
  return { intervalS, signal: name as NodeJS.Signals, graceS }
}

/** Names whose value differs between two reads (added, removed or changed), in name order. */
export function changedNames(before: Readonly<Record<string, string>>, after: Readonly<Record<string, string>>): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(after)])
  return [...names].filter((n) => before[n] !== after[n]).sort()
}

export async function runWatching(ctx: Context, target: Target, first: VariableSet, o: WatchOptions): Promise<number> {
  let current = first
  let tag = first.tag ?? ''
  let running: Started
  let restarting = false
  let failing = false

  const start = (set: VariableSet) => {
    const { env, secrets } = o.prepare(set)
    running = startChild(ctx, { command: o.command, args: o.args, env, mask: o.mask, secrets })
  }

  const stop = forwardSignals(ctx, () => running.child)
  try {
    start(current)
    ctx.err(`envkeep: watching ${current.environment} every ${o.intervalS} s; the command restarts when its values change\n`)
    for (;;) {
      // wait for the next check, or the command's own end
      let timer: NodeJS.Timeout | undefined
      const tick = new Promise<'tick'>((resolve) => {
        timer = setTimeout(() => resolve('tick'), o.intervalS * 1000)
      })
      const ended = running!.exited.then((r) => ({ ended: r }))
      const next = await Promise.race([tick, ended])
      clearTimeout(timer)
      if (next !== 'tick') {
        if (restarting) continue
        return endAs(ctx, next.ended, stop)
      }
      let read: VariableSet | typeof NOT_MODIFIED
      try {
        read = await readEnvironment(ctx, target, { ifTag: tag || 'none' })
      } catch (err) {
        if (!failing) {
          const why = err instanceof CliError ? err.message : 'the check failed'
          ctx.err(`envkeep: could not check ${current.environment} for changes (${why}); the command keeps running, checks go on\n`)
          failing = true
        }
        continue
      }
      if (failing) {
        ctx.err(`envkeep: checking ${current.environment} for changes works again\n`)
        failing = false
      }
      if (read === NOT_MODIFIED) continue
      tag = read.tag ?? ''
      const changed = changedNames(o.prepare(current).env, o.prepare(read).env)
      current = read
      if (changed.length === 0) continue
      ctx.err(`envkeep: ${changed.join(', ')} changed in ${read.environment}; restarting the command (${o.signal})\n`)
      if (read.overridden) ctx.err(overriddenNotice(read.overridden))
      restarting = true
      const old = running!.child
      const oldExit = running!.exited
      old.kill(o.signal)
      let killTimer: NodeJS.Timeout | undefined
      const killed = new Promise<void>((resolve) => {
        killTimer = setTimeout(() => {
          ctx.err(`envkeep: the command did not end within ${o.graceS} s of ${o.signal}; sending SIGKILL\n`)
          old.kill('SIGKILL')
          resolve()
        }, o.graceS * 1000)
      })
      await Promise.race([oldExit.catch(() => undefined), killed])
      await oldExit.catch(() => undefined)
      clearTimeout(killTimer)
      restarting = false
      start(current)
    }
  } catch (err) {
    throw startFailure(o.command, err)
  } finally {
    stop()
  }
}

import { spawn, type ChildProcess } from 'node:child_process'
import { constants } from 'node:os'
import type { Context } from '../context.js'
import { CliError } from '../errors.js'
import { pipeMasked } from '../mask.js'

/** How `run` starts, signals and ends its command (once, or again at each restart of --watch). */

const FORWARDED: NodeJS.Signals[] = ['SIGTERM', 'SIGHUP', 'SIGINT', 'SIGUSR2']

export interface Outcome {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface Started {
  readonly child: ChildProcess
  /** the command's end, once its (masked) output is all written; rejects when it cannot start */
  readonly exited: Promise<Outcome>
}

export function startChild(
  ctx: Context,
  o: { command: string; args: readonly string[]; env: Record<string, string>; mask: boolean; secrets: readonly string[] },
): Started {
  const child = spawn(o.command, [...o.args], { stdio: o.mask ? ['inherit', 'pipe', 'pipe'] : 'inherit', env: o.env, cwd: ctx.deps.cwd })
  const piped = o.mask ? [pipeMasked(child.stdout!, ctx.deps.stdout, o.secrets), pipeMasked(child.stderr!, ctx.deps.stderr, o.secrets)] : []
  const exited = new Promise<Outcome>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code, signal) => void Promise.all(piped).then(() => resolve({ code, signal })))
  })
  return { child, exited }
}

/**
 * Passes SIGTERM, SIGHUP and SIGUSR2 sent to envkeep on to the current
 * command, and SIGINT too when there is no terminal (at a terminal, Ctrl-C
 * reaches the command directly). Returns what stops it.
 */
export function forwardSignals(ctx: Context, current: () => ChildProcess): () => void {
  const handlers = new Map<NodeJS.Signals, () => void>()
  for (const sig of FORWARDED) {
    const h = sig === 'SIGINT' && ctx.deps.isTTY ? () => {} : () => void current().kill(sig)
    handlers.set(sig, h)
    process.on(sig, h)
  }
  return () => {
    for (const [sig, h] of handlers) process.off(sig, h)
    handlers.clear()
  }
}

/** envkeep's exit for the command's: its code, or the same signal raised on envkeep. */
export function endAs(ctx: Context, outcome: Outcome, stopForwarding: () => void): number {
  if (outcome.signal) {
    stopForwarding()
    ctx.deps.raiseSignal(outcome.signal)
    return 128 + (constants.signals[outcome.signal] ?? 0)
  }
  return outcome.code ?? 1
}

/** A command that could not be started: 127 when it is not found, else 126. */
export function startFailure(command: string, err: unknown): CliError {
  const code = (err as NodeJS.ErrnoException).code
  if (code === 'ENOENT') return new CliError(`command not found: ${command}`, { exitCode: 127, cause: err })
  return new CliError(`could not start ${command} (${code ?? 'error'})`, { exitCode: 126, cause: err })
}

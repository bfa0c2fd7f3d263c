import type { ParseArgsConfig } from 'node:util'
import type { Context } from './context.js'

export type OptionSpec = NonNullable<ParseArgsConfig['options']>

export interface Parsed {
  readonly values: Record<string, string | boolean | undefined>
  readonly positionals: string[]
  /** For `run`: everything after `--`. */
  readonly rest: string[]
}

/** One command: one file under commands/. */
export interface Command {
  readonly name: string
  readonly summary: string
  /** Full --help text. */
  readonly help: string
  readonly options: OptionSpec
  /** Positionals: [min, max]. */
  readonly positionals: readonly [number, number]
  /** Whether the arguments after `--` belong to the command (`run`). */
  readonly takesRest?: boolean
  run(ctx: Context, args: Parsed): Promise<number>
}

export const BASE_URL_HELP = `  --base-url URL   the envkeep server (default: $ENVKEEP_BASE_URL, else the last login's)`

import type { ChangeResult } from './results.js'
import type { AccessLogEntry } from './vault-store.js'

/**
 * Personal overrides (issue 24): in an environment whose owners allow it, a
 * person's own value for a variable, used for that person's reads only.
 * Storage keeps the switch and the sealed rows; the domain
 * (domain/overrides.ts) decides who may and whose reads use them. Sealed
 * with additional data binding vault, environment, name and person
 * (`overridePlaceOf`), so a row moved to another person fails to open.
 */

export interface OverrideRow {
  readonly name: string
  readonly personId: string
  readonly sealed: Uint8Array
  readonly updatedAt: Date
}

export type OverrideChange =
  /** turns the environment's switch on or off; off deletes every override of the environment */
  | { readonly kind: 'allow'; readonly vaultId: string; readonly environment: string; readonly allow: boolean }
  /** sets (`sealed`) or removes (`null`) one person's override of one name */
  | {
      readonly kind: 'set'
      readonly vaultId: string
      readonly environment: string
      readonly personId: string
      readonly name: string
      readonly sealed: Uint8Array | null
      readonly now: Date
    }

export interface OverrideStore {
  /**
   * Whether the environment allows overrides, and its overrides: one
   * person's (`personId`), or everyone's; in name, then person order. An
   * unknown environment: not allowed, none.
   */
  readOverrides(vaultId: string, environment: string, personId?: string): Promise<{ allowed: boolean; overrides: OverrideRow[] }>

  /**
   * Applies `change` and appends `log`, in one transaction. Refused, with
   * nothing written or logged: `not_found` for an unknown environment,
   * `not_allowed` for a `set` where overrides are not allowed (checked
   * inside the transaction), `unchanged` for a removal of nothing or a
   * switch already in that position.
   */
  changeOverride(change: OverrideChange, log: AccessLogEntry): Promise<ChangeResult<'not_found' | 'not_allowed' | 'unchanged'>>
}

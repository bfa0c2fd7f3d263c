import { randomUUID } from 'node:crypto'
import type { AccessLogEntry, ChangeEntry, ChangeHow, ChangeKind, EnvironmentInfo, SealedVariable, VaultAccess } from '../adapters/storage.js'
import { authorOf, type Actor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { DomainFailure, fail } from './failure.js'
import { limitOf, overLimit } from './limits.js'
import { AGAIN, retryOptimistic } from './retry.js'
import { mustPropose, PROPOSE_INSTEAD } from './vault-admin.js'

/** What a change makes of an environment: name → its new value, or null to delete it. */
export type Target = Readonly<Record<string, string | null>>

export const ENVIRONMENT_CHANGED = 'the environment changed since this page was shown; check the list again'

/** How many times a change is computed when another writer changed the environment meanwhile. */
const ATTEMPTS = 5

export interface ChangeOutcome {
  /** null when the target was what the environment holds already: nothing written, nothing logged */
  readonly changeSetId: string | null
  readonly entries: readonly { readonly name: string; readonly kind: ChangeKind }[]
  /** the environment's version after the change (or as read, when nothing changed) */
  readonly version: number
}

/**
 * The entries that take `current` to `target` (names whose value stays the same are left out), in name order.
 * A name in `unreadable` has a live value that does not open: it is changed or deleted, never
 * "added", and its `before` is null (recorded as UNREADABLE_BEFORE in history, not guessed).
 */
export function entriesOf(
  current: Readonly<Record<string, string>>,
  target: Target,
  unreadable: ReadonlySet<string> = NONE,
): { name: string; kind: ChangeKind; before: string | null; after: string | null }[] {
  const out: { name: string; kind: ChangeKind; before: string | null; after: string | null }[] = []
  for (const name of Object.keys(target).sort()) {
    const before = Object.hasOwn(current, name) ? (current[name] as string) : null
    const after = target[name] ?? null
    const exists = before !== null || unreadable.has(name)
    if (before === after && !unreadable.has(name)) continue
    if (!exists && after === null) continue
    out.push({ name, kind: !exists ? 'added' : after === null ? 'deleted' : 'changed', before, after })
  }
  return out
}

const NONE: ReadonlySet<string> = new Set()

/**
 * What history keeps as the `before` of a live value that did not open when it was overwritten
 * or deleted (issue 25): zero bytes, which no sealed value can be (nonce and tag alone are 28).
 * Opening it gives nothing (openHistory leaves the name out): shown as "could not be opened",
 * never restored.
 */
export const UNREADABLE_BEFORE: Uint8Array = new Uint8Array(0)

function isDecryptFailure(err: unknown): boolean {
  return err instanceof DomainFailure && err.kind === 'decrypt_failed'
}

/**
 * The current values as far as they open: when the environment's values open together, all
 * of them; else each alone, and the names whose value does not open in `unreadable` (with the
 * first failure, to throw where such a value may not be touched).
 */
export async function openCurrent(
  d: DomainDeps,
  vaultId: string,
  environment: string,
  sealed: readonly SealedVariable[],
): Promise<{ values: Record<string, string>; unreadable: Set<string>; failure: unknown }> {
  try {
    return { values: await d.crypto.openValues(vaultId, environment, sealed), unreadable: new Set(), failure: null }
  } catch (err) {
    if (!isDecryptFailure(err)) throw err
    const values: Record<string, string> = {}
    const unreadable = new Set<string>()
    for (const v of sealed) {
      try {
        Object.assign(values, await d.crypto.openValues(vaultId, environment, [v]))
      } catch (one) {
        if (!isDecryptFailure(one)) throw one
        unreadable.add(v.name)
      }
    }
    return { values, unreadable, failure: err }
  }
}

/**
 * Whether this actor may overwrite or delete live values that do not open: an owner (or the
 * server administrator). Anyone else gets the decrypt failure, as before: they cannot see
 * what they would destroy, and owners are the ones to decide it is lost.
 */
export function mayReplaceUnreadable(actor: Actor, vault: VaultAccess): boolean {
  return actor.kind === 'administrator' || vault.role === 'owner'
}

/**
 * Every change of an environment's values goes through here (issue 12):
 * reads the current values of `names` with the environment's version, lets
 * `plan` say what they become, and writes the values, the change set (each
 * entry's before and after sealed for history) and the log entry in one
 * storage transaction, guarded by that version: if another writer changed
 * the environment meanwhile, it is all computed again (or, with
 * `expectVersion`, refused: the person confirmed a list that no longer holds).
 */
export async function changeEnvironment(
  d: DomainDeps,
  actor: Actor,
  vault: VaultAccess,
  env: EnvironmentInfo,
  o: {
    /** the names whose current values `plan` needs (undefined: all) */
    readonly names?: readonly string[]
    /** `unreadable`: names that have a live value which does not open (see entriesOf) */
    readonly plan: (current: Readonly<Record<string, string>>, unreadable: ReadonlySet<string>) => Target | Promise<Target>
    readonly how: ChangeHow
    readonly ref: string | null
    /** the access-log entry, given the names the change touches */
    readonly log: (names: string[], at: Date) => AccessLogEntry
    readonly expectVersion?: number
  },
): Promise<ChangeOutcome> {
  // the one door of direct changes: with "Require a second person", a person proposes instead
  if (mustPropose(actor, vault, env)) throw fail.forbidden(PROPOSE_INSTEAD)
  let lastReason = ''
  return retryOptimistic(
    ATTEMPTS,
    () => `the environment kept changing while a change was written (${lastReason})`,
    async (): Promise<ChangeOutcome | typeof AGAIN> => {
      const state = await d.storage.readCurrent(vault.id, env.name, { names: o.names })
      if (o.expectVersion !== undefined && state.version !== o.expectVersion) throw fail.conflict(ENVIRONMENT_CHANGED)
      const { values: current, unreadable, failure } = await openCurrent(d, vault.id, env.name, state.variables)
      const target = await o.plan(current, unreadable)
      const entries = entriesOf(current, target, unreadable)
      if (entries.length === 0) return { changeSetId: null, entries: [], version: state.version }
      // a value that no longer opens: an owner may overwrite or delete it, recorded as such (issue 25)
      const replaced = entries.filter((e) => unreadable.has(e.name)).map((e) => e.name)
      if (replaced.length > 0 && !mayReplaceUnreadable(actor, vault)) throw failure
      const id = randomUUID()
      const now = d.now()
      const sets: Record<string, string> = {}
      for (const e of entries) if (e.after !== null) sets[e.name] = e.after
      const sealed = await d.crypto.seal(vault.id, env.name, sets)
      const kept = await d.crypto.sealHistory(vault.id, env.name, id, entries)
      const names = entries.map((e) => e.name)
      const r = await d.storage.changeVariables(
        {
          vaultId: vault.id,
          environment: env.name,
          set: sealed.values,
          delete: entries.filter((e) => e.after === null).map((e) => e.name),
          ifVersion: state.version,
          by: authorOf(actor),
          now,
          limit: limitOf(d.plans, vault.plan),
          sealedUnder: sealed.sealedUnder,
          changeSet: {
            id,
            vaultId: vault.id,
            environment: env.name,
            at: now,
            by: authorOf(actor),
            how: o.how,
            ref: o.ref,
            entries: kept.map(
              (k, i): ChangeEntry => ({
                ...k,
                kind: (entries[i] as { kind: ChangeKind }).kind,
                ...(unreadable.has(k.name) ? { before: UNREADABLE_BEFORE } : {}),
              }),
            ),
          },
        },
        replaced.length > 0 ? { ...o.log(names, now), detail: `replaced a value that could not be opened: ${replaced.join(', ')}` } : o.log(names, now),
      )
      if (r.ok) return { changeSetId: id, entries: entries.map((e) => ({ name: e.name, kind: e.kind })), version: r.value }
      if (r.reason === 'storage_limit') throw overLimit(vault, r, 'this change')
      if (r.reason === 'changed' && o.expectVersion !== undefined) throw fail.conflict(ENVIRONMENT_CHANGED)
      if (r.reason === 'stale_key') d.crypto.forget(vault.id)
      lastReason = r.reason
      return AGAIN
    },
  )
}

/** How a change by this actor came about, when it is not a push, revert or restore. */
export function directHow(actor: Actor): ChangeHow {
  return actor.kind === 'administrator' ? 'admin' : 'page'
}

import type { ChangeEntry, ChangeSetDetail, ChangeSetSummary, EnvironmentInfo, ImportRecord, VaultAccess } from '../adapters/storage.js'
import { entryFor, type Actor } from './actor.js'
import { changeEnvironment, entriesOf, type Target } from './changes.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { mayAccess, revealRefusal, writeRefusal } from './permissions.js'
import { environmentOf, locateEnvironment, locateVault } from './vaults.js'
import { stagePush } from './pushes.js'
import { mustPropose } from './vault-admin.js'
import { ENVIRONMENT_CHANGED } from './changes.js'

/**
 * History and rollback (issue 12). Reading history takes the right to read
 * the environment; reverting and restoring, the right to write it. Values
 * leave only through reveals, each logged (`history_revealed`) with the
 * names before anything is opened.
 */

export const CHANGE_NOT_FOUND = 'this change does not exist or is not shared with you'
export const HISTORY_PAGE = 50

export interface ChangeView {
  readonly vault: VaultAccess
  readonly env: EnvironmentInfo
  readonly change: ChangeSetDetail
  /** later change sets that reverted this one, oldest first */
  readonly revertedBy: readonly ChangeSetSummary[]
}

/** A plan shown on a confirmation page and carried out after it: exactly what is written and deleted. */
export interface RollbackPlan {
  readonly view: ChangeView
  /** the environment's version the plan was computed at (the confirmation form carries it) */
  readonly version: number
  readonly write: readonly string[]
  readonly delete: readonly string[]
  /** revert only: names changed again since, left alone unless `alsoLater` */
  readonly conflicts: readonly string[]
  readonly alsoLater: boolean
  /** true where a second person is required: carrying it out proposes a push instead (writes only) */
  readonly propose: boolean
}

async function readableEnvironment(d: DomainDeps, actor: Actor, vault: VaultAccess, env: EnvironmentInfo): Promise<void> {
  if (mayAccess(vault, env, 'read')) return
  await d.storage.appendAccessLog(entryFor(actor, { vaultId: vault.id, action: 'refused', at: d.now(), environment: env.name }))
  throw fail.forbidden(revealRefusal(vault.role, env))
}

/** Change sets of an environment, newest first, `HISTORY_PAGE` at a time (`beforeSeq` pages on). */
export async function listHistory(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; environment: string; beforeSeq?: number; limit?: number },
): Promise<{ vault: VaultAccess; env: EnvironmentInfo; changes: ChangeSetSummary[]; nextBeforeSeq: number | null }> {
  const { vault, env } = await locateEnvironment(d, actor, input.vaultId, input.environment)
  await readableEnvironment(d, actor, vault, env)
  const limit = Math.min(Math.max(1, input.limit ?? HISTORY_PAGE), 500)
  const page = await d.storage.listChangeSets(vault.id, { environment: env.name, limit: limit + 1, beforeSeq: input.beforeSeq })
  const changes = page.slice(0, limit)
  return { vault, env, changes, nextBeforeSeq: page.length > limit ? (changes[changes.length - 1] as ChangeSetSummary).seq : null }
}

/** One change set with its entries (values still sealed), for its page. */
export async function loadChange(d: DomainDeps, actor: Actor, input: { vaultId: string; changeSetId: string }): Promise<ChangeView> {
  const vault = await locateVault(d, actor, input.vaultId)
  const [change] = await d.storage.listChangeSets(vault.id, { id: input.changeSetId, entries: true, limit: 1 })
  if (!change) throw fail.notFound(CHANGE_NOT_FOUND, 'the change')
  const env = vault.environments.find((e) => e.name === change.environment) ?? { name: change.environment, ownersOnly: true }
  await readableEnvironment(d, actor, vault, env)
  const revertedBy = (await d.storage.listChangeSets(vault.id, { ref: change.id, limit: 20 })).filter((c) => c.how === 'revert').reverse()
  return { vault, env, change, revertedBy }
}

/** The change set that applied a push, if it is kept, with the change sets that reverted it. */
export async function changeOfPush(
  d: DomainDeps,
  vault: VaultAccess,
  pushId: string,
): Promise<{ change: ChangeSetSummary; revertedBy: ChangeSetSummary[] } | null> {
  const change = (await d.storage.listChangeSets(vault.id, { ref: pushId, limit: 5 })).find((c) => c.how === 'push')
  if (!change) return null
  const revertedBy = (await d.storage.listChangeSets(vault.id, { ref: change.id, limit: 20 })).filter((c) => c.how === 'revert').reverse()
  return { change, revertedBy }
}

/** The values before and after of a change set (or of one name in it): logged as `history_revealed` first. */
export async function revealChange(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; changeSetId: string; name?: string },
): Promise<ChangeView & { before: Record<string, string | null>; after: Record<string, string | null> }> {
  const view = await loadChange(d, actor, input)
  if (!d.hasKey) throw fail.notConfigured()
  const entries = input.name === undefined ? view.change.entries : view.change.entries.filter((e) => e.name === input.name)
  if (entries.length === 0) throw fail.notFound('that variable is not part of this change')
  const { vault, change } = view
  await d.storage.appendAccessLog(
    entryFor(actor, { vaultId: vault.id, action: 'history_revealed', at: d.now(), environment: change.environment, names: entries.map((e) => e.name) }),
  )
  const before = await d.crypto.openHistory(vault.id, change.environment, change.id, 'before', entries)
  const after = await d.crypto.openHistory(vault.id, change.environment, change.id, 'after', entries)
  return { ...view, before, after }
}

/** The versions of one variable, newest first (values sealed; reveal one with `revealChange` and its name). */
export async function variableHistory(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; environment: string; name: string },
): Promise<{ vault: VaultAccess; env: EnvironmentInfo; versions: VariableVersion[] }> {
  const { vault, env } = await locateEnvironment(d, actor, input.vaultId, input.environment)
  await readableEnvironment(d, actor, vault, env)
  const sets = await d.storage.listChangeSets(vault.id, { environment: env.name, name: input.name, entries: true, limit: 200 })
  const versions = sets.flatMap(({ entries, ...changeSet }) => entries.map((entry) => ({ changeSet, entry })))
  return { vault, env, versions }
}

/** One version of a variable: the entry of a change set that touched it. */
export interface VariableVersion {
  readonly changeSet: ChangeSetSummary
  readonly entry: ChangeEntry
}

/**
 * For each name touched by `sets` (newest first, as listChangeSets answers
 * them), its FIRST entry among them, with that change set's id, in name
 * order: after a change set, the entry whose `before` is the value the name
 * had right after it.
 */
export function firstChanges(sets: readonly ChangeSetDetail[]): { name: string; changeSetId: string; entry: ChangeEntry }[] {
  const first = new Map<string, { name: string; changeSetId: string; entry: ChangeEntry }>()
  for (let i = sets.length - 1; i >= 0; i--) {
    const set = sets[i] as ChangeSetDetail
    for (const entry of set.entries) if (!first.has(entry.name)) first.set(entry.name, { name: entry.name, changeSetId: set.id, entry })
  }
  return [...first.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/** For each name changed after `afterSeq`: the value it had right after it, from history (null: none). */
async function valuesRightAfter(d: DomainDeps, vault: VaultAccess, environment: string, afterSeq: number): Promise<Map<string, string | null>> {
  const later = firstChanges(await d.storage.listChangeSets(vault.id, { environment, afterSeq, entries: true }))
  const out = new Map<string, string | null>()
  const byChange = new Map<string, typeof later>()
  for (const l of later) byChange.set(l.changeSetId, [...(byChange.get(l.changeSetId) ?? []), l])
  for (const [changeSetId, group] of byChange) {
    const opened = await d.crypto.openHistory(
      vault.id,
      environment,
      changeSetId,
      'before',
      group.map((g) => g.entry),
    )
    // a value recorded as unreadable (left out by openHistory) is not restored: never guessed
    for (const g of group) if (Object.hasOwn(opened, g.name)) out.set(g.name, opened[g.name] ?? null)
  }
  return out
}

async function rollbackTarget(
  d: DomainDeps,
  view: ChangeView,
  kind: 'revert' | 'restore',
  alsoLater: boolean,
): Promise<{ target: Map<string, string | null>; conflicts: string[] }> {
  const { vault, change } = view
  if (kind === 'restore') return { target: await valuesRightAfter(d, vault, change.environment, change.seq), conflicts: [] }
  const later = new Set(
    (await d.storage.listChangeSets(vault.id, { environment: change.environment, afterSeq: change.seq })).flatMap((c) => [
      ...c.added,
      ...c.changed,
      ...c.deleted,
    ]),
  )
  const before = await d.crypto.openHistory(vault.id, change.environment, change.id, 'before', change.entries)
  const target = new Map<string, string | null>()
  const conflicts: string[] = []
  for (const e of change.entries) {
    if (!Object.hasOwn(before, e.name)) continue // its value before could not be opened: nothing to go back to
    if (later.has(e.name)) {
      conflicts.push(e.name)
      if (!alsoLater) continue
    }
    target.set(e.name, before[e.name] ?? null)
  }
  return { target, conflicts }
}

async function writableChange(d: DomainDeps, actor: Actor, input: { vaultId: string; changeSetId: string }): Promise<ChangeView> {
  const view = await loadChange(d, actor, input)
  const env = environmentOf(view.vault, view.change.environment)
  if (!mayAccess(view.vault, env, 'write')) throw fail.forbidden(writeRefusal(view.vault.role))
  if (!d.hasKey) throw fail.notConfigured()
  return view
}

/**
 * What reverting (every variable of the change back to its value before
 * it) or restoring (every variable of the environment back to its value
 * right after it) would write and delete now. Nothing is logged or written.
 */
export async function planRollback(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; changeSetId: string; kind: 'revert' | 'restore'; alsoLater?: boolean },
): Promise<RollbackPlan> {
  const view = await writableChange(d, actor, input)
  const alsoLater = input.kind === 'revert' && input.alsoLater === true
  const { target, conflicts } = await rollbackTarget(d, view, input.kind, alsoLater)
  const state = await d.storage.readCurrent(view.vault.id, view.change.environment, { names: [...target.keys()] })
  const current = await d.crypto.openValues(view.vault.id, view.change.environment, state.variables)
  const entries = entriesOf(current, Object.fromEntries(target))
  return {
    view,
    version: state.version,
    write: entries.filter((e) => e.after !== null).map((e) => e.name),
    delete: entries.filter((e) => e.after === null).map((e) => e.name),
    conflicts,
    alsoLater,
    propose: mustPropose(actor, view.vault, environmentOf(view.vault, view.change.environment)),
  }
}

/**
 * Reverts or restores, as one new change set, exactly as planned at
 * `version` (the confirmation page's): a changed environment is refused
 * (conflict) so the person sees the new list first.
 */
export async function rollBack(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; changeSetId: string; kind: 'revert' | 'restore'; alsoLater?: boolean; version?: number },
): Promise<{ view: ChangeView; changeSetId: string | null; written: string[]; deleted: string[]; proposed: ImportRecord | null }> {
  const view = await writableChange(d, actor, input)
  const { vault, change } = view
  const env = environmentOf(vault, change.environment)
  const alsoLater = input.kind === 'revert' && input.alsoLater === true
  if (mustPropose(actor, vault, env) && actor.kind === 'person') {
    // a second person is required: what the rollback would write becomes a push (issue 25)
    const plan = await planRollback(d, actor, input)
    if (input.version !== undefined && plan.version !== input.version) throw fail.conflict(ENVIRONMENT_CHANGED)
    if (plan.write.length === 0 && plan.delete.length === 0) return { view, changeSetId: null, written: [], deleted: [], proposed: null }
    const { target } = await rollbackTarget(d, view, input.kind, alsoLater)
    const variables: Record<string, string> = {}
    for (const name of plan.write) variables[name] = target.get(name) as string
    const proposed = await stagePush(d, actor, vault, env, { variables }, plan.delete)
    return { view, changeSetId: null, written: [], deleted: [], proposed }
  }
  let target: Target = {}
  const r = await changeEnvironment(d, actor, vault, env, {
    names: undefined,
    how: input.kind,
    ref: change.id,
    expectVersion: input.version,
    plan: async () => {
      target = Object.fromEntries((await rollbackTarget(d, view, input.kind, alsoLater)).target)
      return target
    },
    log: (names, at) =>
      entryFor(actor, {
        vaultId: vault.id,
        action: input.kind === 'revert' ? 'change_reverted' : 'environment_restored',
        at,
        environment: env.name,
        names,
        detail: change.id,
      }),
  })
  return {
    view,
    changeSetId: r.changeSetId,
    written: r.entries.filter((e) => e.kind !== 'deleted').map((e) => e.name),
    deleted: r.entries.filter((e) => e.kind === 'deleted').map((e) => e.name),
    proposed: null,
  }
}

/** Retention (housekeeping): versions older than `days`, beyond each variable's last `keep`, are deleted. */
export async function pruneHistory(d: Pick<DomainDeps, 'storage' | 'now'>, days: number, keep = 10): Promise<number> {
  const r = await d.storage.pruneHistory(new Date(d.now().getTime() - days * 86_400_000), keep)
  return r.ok ? r.value : 0
}

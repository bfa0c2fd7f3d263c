import { randomUUID } from 'node:crypto'
import type { CreateImportResult } from '../adapters/import-store.js'
import type { ChangeKind, EnvironmentInfo, ImportRecord, ImportStatus, NewChangeSet, RefusedLine, VaultAccess } from '../adapters/storage.js'
import { releaseSealed } from '../crypto/seal.js'
import { entryFor, type Actor, type PersonActor } from './actor.js'
import { entriesOf, mayReplaceUnreadable, openCurrent, UNREADABLE_BEFORE } from './changes.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { limitOf, overLimit } from './limits.js'
import { canDecideImport, decideRefusal, mayAccess, roleRefusal } from './permissions.js'
import { isWellFormed, MAX_NAME_LENGTH, MAX_REASON, MAX_REFUSED, nameProblem, valueProblem } from './rules.js'
import { checkNewReference, parseTarget, referenceForm, referenceOf, type ReferenceTarget } from './references.js'
import { AGAIN, retryOptimistic } from './retry.js'
import { secondPersonRequired } from './vault-admin.js'
import { listVaults, locateEnvironment, locateVault, type Located } from './vaults.js'
import { notifyWebhooks } from './webhooks.js'

/**
 * Pushes: a .env file sent from the command line waits as a pending push
 * until a person with write access applies or rejects it (decisions.md).
 */

/** Longest reason a person may give when rejecting a push. */
export const MAX_REJECT_REASON = 500

export const PUSH_NOT_FOUND = 'this push does not exist or is not shared with you'

export interface PushInput {
  readonly variables: Readonly<Record<string, string>>
  /** name → `ENVIRONMENT.NAME`: references proposed (`envkeep set NAME --ref`), never parsed out of a value */
  readonly references?: Readonly<Record<string, string>>
  readonly refused?: readonly RefusedLine[]
}

/** Why a push body is refused, or null. Reasons name the position of what is wrong, never its content. */
export function pushProblem(body: PushInput, deletes: readonly string[] = []): string | null {
  const names = Object.keys(body.variables)
  const refs = Object.keys(body.references ?? {})
  if (names.length === 0 && refs.length === 0 && deletes.length === 0) return 'the push holds no variables'
  for (let i = 0; i < deletes.length; i++) {
    const name = deletes[i] as string
    if (nameProblem(name) || deletes.indexOf(name) !== i) return `deletion ${i + 1} of the push has a bad name`
    if (Object.hasOwn(body.variables, name) || Object.hasOwn(body.references ?? {}, name))
      return `deletion ${i + 1} of the push names a variable the push also sends`
  }
  for (let i = 0; i < refs.length; i++) {
    const name = refs[i] as string
    const np = nameProblem(name)
    if (np) return `reference ${i + 1} of the push has a bad name: ${np}`
    if (Object.hasOwn(body.variables, name)) return `reference ${i + 1} of the push names a variable the push also sends a value for`
    const target = parseTarget((body.references as Record<string, string>)[name] as string)
    if (typeof target === 'string') return `reference ${i + 1} of the push: ${target}`
  }
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string
    const np = nameProblem(name)
    if (np) return `variable ${i + 1} of the push has a bad name: ${np}`
    const vp = valueProblem(body.variables[name] as string)
    if (vp) return `variable ${i + 1} of the push has a bad value: ${vp}`
  }
  const refused = body.refused ?? []
  if (refused.length > MAX_REFUSED) return `at most ${MAX_REFUSED} refused entries are accepted`
  for (let i = 0; i < refused.length; i++) {
    const r = refused[i] as RefusedLine
    if (!Number.isSafeInteger(r.line) || r.line < 1) return `refused entry ${i + 1}: line must be an integer of at least 1`
    if (r.name.length > MAX_NAME_LENGTH) return `refused entry ${i + 1}: name must be at most ${MAX_NAME_LENGTH} characters`
    if (!isWellFormed(r.name)) return `refused entry ${i + 1}: name must be valid Unicode (no lone UTF-16 surrogate)`
    if (!isWellFormed(r.reason)) return `refused entry ${i + 1}: reason must be valid Unicode (no lone UTF-16 surrogate)`
    if (r.reason.length < 1 || r.reason.length > MAX_REASON) return `refused entry ${i + 1}: reason must be 1 to ${MAX_REASON} characters`
  }
  return null
}

/**
 * A push from a sign-in: the roles that may read the environment may push
 * to it; values are sealed and staged, counted against the plan's limit
 * in storage's transaction, and `push_created` logged with it.
 */
export async function createPush(
  d: DomainDeps,
  actor: PersonActor,
  input: { vaultId: string; environment: string; body: PushInput },
  located?: Located,
): Promise<ImportRecord> {
  const { vault, env } = await locateEnvironment(d, actor, input.vaultId, input.environment)
  located?.(vault, env)
  if (!mayAccess(vault, env, 'read')) throw fail.forbidden(roleRefusal(vault.role, env, 'push to'))
  return stagePush(d, actor, vault, env, input.body)
}

/**
 * Stages a push (checked, sealed, counted against the plan's limit, `push_created` logged in
 * storage's transaction) and enqueues its webhooks. The callers have checked the right to
 * push; the pages' proposals (issue 25: changes on an environment that requires a second
 * person) come here too, and only they stage `deletes` (names deleted when it is applied).
 */
export async function stagePush(
  d: DomainDeps,
  actor: PersonActor,
  vault: VaultAccess,
  env: EnvironmentInfo,
  body: PushInput,
  deletes: readonly string[] = [],
): Promise<ImportRecord> {
  if (!d.hasKey) throw fail.notConfigured()
  const problem = pushProblem(body, deletes)
  if (problem) throw fail.invalid(problem)
  // references: checked with the sender's rights now, and again with the decider's when applied
  const forms: Record<string, string> = { ...body.variables }
  for (const [name, text] of Object.entries(body.references ?? {})) {
    const target = parseTarget(text) as ReferenceTarget
    await checkNewReference(d, vault, env, name, target)
    forms[name] = referenceForm(target)
  }
  // sorted once, here: sealed in name order, storage's own sort of them finds them in order
  const valued = Object.keys(forms).sort()
  const stored: Record<string, string> = {}
  for (const name of valued) stored[name] = forms[name] as string
  const now = d.now()
  const names = deletes.length === 0 ? valued : [...valued, ...deletes].sort()
  // sealed again if storage says the vault's data key changed since it was cached (rotated by
  // another process): a value is never stored under a key the vault no longer has
  const r = await retryOptimistic(
    3,
    () => 'the vault key kept changing while the push was sealed',
    async () => {
      const sealed = await d.crypto.seal(vault.id, env.name, stored)
      // storage copies what it keeps: the sealed block is freed once it has answered (crypto/seal.ts)
      let r: CreateImportResult
      try {
        r = await d.storage.createImport(
          {
            id: randomUUID(),
            vaultId: vault.id,
            environment: env.name,
            senderId: actor.personId,
            signInId: actor.signInId,
            values: sealed.values,
            deletes,
            sealedUnder: sealed.sealedUnder,
            refused: (body.refused ?? []).map((l) => ({ line: l.line, name: l.name, reason: l.reason })),
            createdAt: now,
            expiresAt: new Date(now.getTime() + d.importTtlMs),
            limit: limitOf(d.plans, vault.plan),
          },
          entryFor(actor, { vaultId: vault.id, action: 'push_created', at: now, environment: env.name, names }),
        )
      } finally {
        releaseSealed(sealed.values[0]?.sealed)
      }
      if (r.ok || r.reason !== 'stale_key') return r
      d.crypto.forget(vault.id)
      return AGAIN
    },
  )
  if (!r.ok) throw overLimit(vault, r, 'this push')
  if (r.webhooks) await notifyWebhooks(d, r.value.id)
  return r.value
}

/** A push's status, for its sender only: anyone else gets the answer of an unknown push. */
export async function pushStatus(d: DomainDeps, actor: PersonActor, importId: string): Promise<ImportRecord> {
  const imp = await d.storage.getImport(importId, d.now())
  if (!imp || imp.senderId !== actor.personId) throw fail.notFound(PUSH_NOT_FOUND, 'the push')
  return imp
}

/** Whether a push waits for a decision at `nowMs`: pending and not past its expiry (past it, its next read expires it). */
export function isWaiting(p: Pick<ImportRecord, 'status' | 'expiresAt'>, nowMs: number): boolean {
  return p.status === 'pending' && p.expiresAt.getTime() > nowMs
}

/**
 * A vault's pushes, newest first, for any member: a pending push past its
 * expiry is left out (it becomes `expired` on its next read), so it is never
 * offered for review.
 */
export async function listPushes(d: DomainDeps, actor: Actor, input: { vaultId: string; status?: ImportStatus; limit: number }): Promise<ImportRecord[]> {
  const vault = await locateVault(d, actor, input.vaultId)
  const list = await d.storage.listImports(vault.id, { ...(input.status ? { status: input.status } : {}), limit: input.limit })
  const now = d.now().getTime()
  return list.filter((p) => p.status !== 'pending' || isWaiting(p, now))
}

/**
 * The vault a push belongs to, for a host that knows only the push's id
 * (decideImport): nothing else of it, since no access is checked here;
 * null when there is no such push.
 */
export async function vaultOfPush(d: DomainDeps, importId: string): Promise<string | null> {
  return (await d.storage.getImport(importId, d.now()))?.vaultId ?? null
}

/** How many pushes of a located vault wait for a decision (the tab bar's count), looking at the newest `PENDING_SHOWN`. */
export async function pendingPushes(d: DomainDeps, vault: VaultAccess): Promise<number> {
  const now = d.now().getTime()
  return (await d.storage.listImports(vault.id, { status: 'pending', limit: PENDING_SHOWN })).filter((p) => isWaiting(p, now)).length
}

/** Pending pushes a vault's pages list and count. */
export const PENDING_SHOWN = 50

export interface PushView {
  readonly vault: VaultAccess
  readonly push: ImportRecord
  /** the push's environment (owners-only if it is gone) */
  readonly env: EnvironmentInfo
}

/** A push of a vault as a member sees it (expired first if its time is up), or not_found. */
export async function loadPush(d: DomainDeps, actor: Actor, input: { vaultId: string; importId: string }): Promise<PushView> {
  const vault = await locateVault(d, actor, input.vaultId)
  const push = await d.storage.getImport(input.importId, d.now())
  if (!push || push.vaultId !== vault.id) throw fail.notFound(PUSH_NOT_FOUND, 'the push')
  const env = vault.environments.find((e) => e.name === push.environment) ?? { name: push.environment, ownersOnly: true }
  return { vault, push, env }
}

/** Whether the actor may decide this push now (for offering the buttons). */
export function mayDecide(actor: Actor, view: PushView): boolean {
  const isSender = actor.kind === 'person' && view.push.senderId === actor.personId
  return view.push.status === 'pending' && canDecideImport(view.vault.role, view.env, isSender, secondPersonRequired(view.vault, view.env))
}

/**
 * How far the waiting-push counts look: one query (`listImports`, pending,
 * at most WAITING_PER_VAULT rows) for each of the first WAITING_VAULTS vaults
 * where the person may decide anything. Past either, the count says "at least".
 */
export const WAITING_VAULTS = 50
export const WAITING_PER_VAULT = 100

export interface PushesWaiting {
  /** vault id → pushes waiting for the person there; only vaults with at least one */
  readonly byVault: ReadonlyMap<string, number>
  readonly total: number
  /** true when there may be more than counted (vaults or pushes past the limits above) */
  readonly more: boolean
}

/**
 * The pending pushes waiting for a person, per vault: not past their expiry
 * (a push past it is expired on its next read) and ones the person may apply
 * or reject. That leaves out a viewer's (they may not review values), an
 * editor's on owners-only environments, and the sender's own push where a
 * second person is required (it waits for someone else). Vaults where the
 * role decides nothing cost no query. `vaults`: the person's vaults when the
 * caller has them already (listVaults), else they are listed here.
 */
export async function pushesWaiting(d: DomainDeps, personId: string, vaults?: readonly VaultAccess[]): Promise<PushesWaiting> {
  const all = vaults ?? (await listVaults(d, personId))
  const deciding = all.filter((v) => v.environments.some((e) => mayAccess(v, e, 'write')))
  const looked = deciding.slice(0, WAITING_VAULTS)
  const lists = await Promise.all(looked.map((v) => d.storage.listImports(v.id, { status: 'pending', limit: WAITING_PER_VAULT })))
  const now = d.now().getTime()
  const byVault = new Map<string, number>()
  let total = 0
  let more = deciding.length > looked.length
  looked.forEach((vault, i) => {
    const list = lists[i] ?? []
    if (list.length >= WAITING_PER_VAULT) more = true
    const n = list.filter((p) => {
      if (!isWaiting(p, now)) return false
      const env = vault.environments.find((e) => e.name === p.environment) ?? { name: p.environment, ownersOnly: true }
      return canDecideImport(vault.role, env, p.senderId === personId, secondPersonRequired(vault, env))
    }).length
    if (n > 0) byVault.set(vault.id, n)
    total += n
  })
  return { byVault, total, more }
}

/**
 * Applies or rejects a pending push: an owner, or an editor on an
 * environment that is not owners-only; the sender only when the vault does
 * not require a second person. Applying writes every staged value or none.
 */
export async function decidePush(
  d: DomainDeps,
  actor: PersonActor,
  input: { vaultId: string; importId: string; decision: 'applied' | 'rejected'; reason?: string },
): Promise<ImportRecord> {
  const reason = input.decision === 'rejected' ? (input.reason ?? '').replace(/\r\n?/g, '\n').trim() : ''
  if (reason.length > MAX_REJECT_REASON) throw fail.invalid(`a reason must be at most ${MAX_REJECT_REASON} characters`)
  if (!isWellFormed(reason)) throw fail.invalid('a reason must be valid Unicode')
  const view = await loadPush(d, actor, input)
  const { vault, push, env } = view
  if (!canDecideImport(vault.role, env, push.senderId === actor.personId, secondPersonRequired(vault, env)))
    throw fail.forbidden(decideRefusal(vault.role, env))
  if (push.status !== 'pending') throw fail.conflict(`this push is already ${push.status}`)
  if (input.decision === 'applied' && !d.hasKey) throw fail.notConfigured() // the values it replaces are kept in history, sealed
  // computed again if the environment changed between reading its values and the decision
  return retryOptimistic(
    5,
    () => 'the environment kept changing while a push was applied',
    async () => {
      const now = d.now()
      const log = entryFor(actor, {
        vaultId: vault.id,
        action: input.decision === 'applied' ? 'push_applied' : 'push_rejected',
        at: now,
        environment: push.environment,
        names: push.names,
      })
      const decision = { importId: push.id, decision: input.decision, by: actor.personId, now, reason: reason || null }
      const r = await d.storage.decideImport(input.decision === 'applied' ? { ...decision, ...(await pushChangeSet(d, actor, view, now)) } : decision, log)
      if (r.ok) {
        if (r.webhooks) await notifyWebhooks(d, r.value.id)
        return r.value
      }
      if (r.reason === 'not_pending') throw fail.conflict(`this push is already ${(await d.storage.getImport(push.id, d.now()))?.status ?? 'gone'}`)
      return AGAIN
    },
  )
}

/**
 * The change set of applying a push: each staged name's value before
 * (what the environment holds now) and after, sealed for history, with the
 * environment's version they were read at (storage refuses the decision
 * if it changed meanwhile, and it is computed again).
 */
async function pushChangeSet(d: DomainDeps, actor: PersonActor, view: PushView, now: Date): Promise<{ ifVersion: number; changeSet: NewChangeSet }> {
  const { vault, push } = view
  const state = await d.storage.readCurrent(vault.id, push.environment, { names: push.names })
  const staged = (await d.storage.getImport(push.id, now, { values: true }))?.values ?? []
  const { values: current, unreadable, failure } = await openCurrent(d, vault.id, push.environment, state.variables)
  const incoming: Record<string, string | null> = await d.crypto.openValues(vault.id, push.environment, staged)
  for (const name of push.deletes) incoming[name] = null // a proposed deletion (issue 25)
  // a reference it holds must still be one the decider may make (rights, target, no cycle)
  for (const [name, form] of Object.entries(incoming)) {
    const target = form === null ? null : referenceOf(form)
    if (target) await checkNewReference(d, vault, view.env, name, target)
  }
  const entries = entriesOf(current, incoming, unreadable)
  // a live value that no longer opens: an owner's Apply replaces it, recorded as unreadable
  if (entries.some((e) => unreadable.has(e.name)) && !mayReplaceUnreadable(actor, vault)) throw failure
  const id = randomUUID()
  const sealed = (await d.crypto.sealHistory(vault.id, push.environment, id, entries)).map((k) =>
    unreadable.has(k.name) ? { ...k, before: UNREADABLE_BEFORE } : k,
  )
  return {
    ifVersion: state.version,
    changeSet: {
      id,
      vaultId: vault.id,
      environment: push.environment,
      at: now,
      by: actor.personId,
      how: 'push',
      ref: push.id,
      entries: sealed.map((k, i) => ({ ...k, kind: (entries[i] as { kind: ChangeKind }).kind })),
    },
  }
}

/**
 * The staged values of a pending push, with the current values of the
 * names it overwrites, for the review page. Logged as a read of the staged
 * names before any value is opened; a role that may not read is refused
 * and the refusal logged.
 */
export async function revealPush(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; importId: string },
): Promise<PushView & { values: Record<string, string>; current: Record<string, string> }> {
  const view = await loadPush(d, actor, input)
  const { vault, push, env } = view
  if (push.status !== 'pending') throw fail.conflict(`this push is ${push.status}; its values are no longer kept`)
  const entry = { vaultId: vault.id, at: d.now(), environment: push.environment }
  if (!mayAccess(vault, env, 'read')) {
    await d.storage.appendAccessLog(entryFor(actor, { ...entry, action: 'refused' }))
    throw fail.forbidden(`your role (${vault.role}) cannot read the values of this environment`)
  }
  if (!d.hasKey) throw fail.notConfigured()
  const staged = (await d.storage.getImport(push.id, d.now(), { values: true }))?.values ?? []
  const existing = push.overwrites.length > 0 ? (await d.storage.readCurrent(vault.id, push.environment, { names: push.overwrites })).variables : []
  // logged before the values leave the server; if the log fails, nothing is shown
  await d.storage.appendAccessLog(entryFor(actor, { ...entry, action: 'read', names: staged.map((s) => s.name) }))
  const values = await d.crypto.openValues(vault.id, push.environment, staged)
  const current = await d.crypto.openValues(vault.id, push.environment, existing)
  return { ...view, values, current }
}

import type { EnvironmentInfo, ImportRecord, VariableMeta, VaultAccess } from '../adapters/storage.js'
import { entryFor, type Actor } from './actor.js'
import { changeEnvironment, directHow } from './changes.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { ciLimitRefusal, mayAccess, revealRefusal, roleRefusal, writeRefusal } from './permissions.js'
import { nameProblem, valueProblem } from './rules.js'
import { checkNewReference, describeReferences, parseTarget, type ReferenceInfo, referenceForm, resolveReferences } from './references.js'
import { applyOverrides, ownOverrides } from './overrides.js'
import { wipe } from '../crypto/wipe.js'
import { locateEnvironment, type Located } from './vaults.js'
import { stagePush } from './pushes.js'
import { mustPropose } from './vault-admin.js'

export const VARIABLE_NOT_FOUND = 'that variable does not exist in this environment'
const EXISTS = 'a variable with that name exists in this environment; use Change to give it a new value'

export type { Located }

export interface ReadResult {
  readonly vault: VaultAccess
  readonly env: EnvironmentInfo
  /** name → value, in name order */
  readonly values: Record<string, string>
  /** names whose value is the reader's own personal override, in name order */
  readonly overridden: readonly string[]
}

/**
 * A whole read answered as JSON text (the API's read, `readEnvironmentJson`): the values as
 * the text of `{ name: value }` in name order, when no value is a reference and no override of
 * the reader's applies (otherwise the answer is a ReadResult). Logged as any read.
 */
export interface JsonRead {
  readonly vault: VaultAccess
  readonly env: EnvironmentInfo
  /** UTF-8 JSON text of the variables object */
  readonly json: Buffer
  readonly overridden: readonly []
}

/**
 * Every value of an environment, for the command line (`GET /api/env`). A
 * role that may not read is refused and the refusal logged; a read is
 * logged, with exactly the names read, before any value is opened.
 * Two storage calls: the vault as the actor sees it, then read-and-log.
 */
export async function readEnvironment(d: DomainDeps, actor: Actor, input: { vaultId: string; environment: string }, located?: Located): Promise<ReadResult> {
  const { vault, env } = await locateEnvironment(d, actor, input.vaultId, input.environment)
  located?.(vault, env)
  await requireRead(d, actor, vault, env, roleRefusal(vault.role, env, 'read'))
  return read(d, actor, vault, env)
}

/** `readEnvironment`, answered as JSON text where it can be (JsonRead): no object of the values is built. */
export async function readEnvironmentJson(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; environment: string },
  located?: Located,
): Promise<ReadResult | JsonRead> {
  const { vault, env } = await locateEnvironment(d, actor, input.vaultId, input.environment)
  located?.(vault, env)
  await requireRead(d, actor, vault, env, roleRefusal(vault.role, env, 'read'))
  return read(d, actor, vault, env, undefined, true)
}

/** Values shown on the vault page after Reveal: all of the environment's (no `name`), or one. */
export async function revealValues(d: DomainDeps, actor: Actor, input: { vaultId: string; environment: string; name?: string }): Promise<ReadResult> {
  const { vault, env } = await locateEnvironment(d, actor, input.vaultId, input.environment)
  await requireRead(d, actor, vault, env, revealRefusal(vault.role, env))
  if (input.name === undefined || input.name === '') return read(d, actor, vault, env)
  const r = await read(d, actor, vault, env, [input.name])
  if (Object.keys(r.values).length === 0) throw fail.notFound(VARIABLE_NOT_FOUND)
  return r
}

async function requireRead(d: DomainDeps, actor: Actor, vault: VaultAccess, env: EnvironmentInfo, refusal: string): Promise<void> {
  if (mayAccess(vault, env, 'read')) return
  refusal = ciLimitRefusal(vault, env) ?? refusal
  await d.storage.appendAccessLog(entryFor(actor, { vaultId: vault.id, action: 'refused', at: d.now(), environment: env.name }))
  throw fail.forbidden(refusal)
}

function read(d: DomainDeps, actor: Actor, vault: VaultAccess, env: EnvironmentInfo, names?: readonly string[]): Promise<ReadResult>
function read(d: DomainDeps, actor: Actor, vault: VaultAccess, env: EnvironmentInfo, names: undefined, asJson: true): Promise<ReadResult | JsonRead>
async function read(
  d: DomainDeps,
  actor: Actor,
  vault: VaultAccess,
  env: EnvironmentInfo,
  names?: readonly string[],
  asJson = false,
): Promise<ReadResult | JsonRead> {
  if (!d.hasKey) throw fail.notConfigured() // before the read: nothing is logged as read that cannot be opened
  const state = await d.storage.readCurrent(vault.id, env.name, { names })
  // storage answers in name order already; sort only if it did not
  const sorted = inNameOrder(state.variables) ? state.variables : [...state.variables].sort(byName)
  // the reader's own overrides, read first where the answer may be JSON text: with any, it is not
  const own = asJson ? await ownOverrides(d, actor, vault, env) : undefined
  let stored: Record<string, string>
  if (asJson && !own && sorted.length > 0) {
    const opened = await d.crypto.openValuesJson(vault.id, env.name, sorted)
    if (!opened.mayRefer) {
      // logged before any value leaves, with exactly the names read
      await logRead(
        d,
        actor,
        vault.id,
        env.name,
        sorted.map((v) => v.name),
      )
      return { vault, env, json: opened.json, overridden: [] }
    }
    stored = JSON.parse(opened.json.toString('utf8')) as Record<string, string>
    wipe(opened.json)
  } else {
    // openValues fills its object in the order given (names never look like array indexes)
    stored = await d.crypto.openValues(vault.id, env.name, sorted)
  }
  // references are followed with the reader's rights now; a refusal or a broken one fails the whole read
  const { values, used } = await resolveReferences(d, actor, vault, env, stored)
  // the reader's own overrides, for their reads only
  const overridden = await applyOverrides(d, actor, vault, env, values, own)
  // logged before any value leaves: the environment read, and each one a reference led into
  const at = d.now()
  await logRead(d, actor, vault.id, env.name, Object.keys(values), at)
  for (const [other, usedNames] of used) await logRead(d, actor, vault.id, other, usedNames, at)
  return { vault, env, values, overridden }
}

/** Logs a read of `names` in `environment` (before any value leaves: the caller awaits it). */
export async function logRead(d: DomainDeps, actor: Actor, vaultId: string, environment: string, names: readonly string[], at = d.now()): Promise<void> {
  await d.storage.appendAccessLog(entryFor(actor, { vaultId, action: 'read', at, environment, names }))
}

/** One variable to write: its value, or (`ref`, `ENVIRONMENT.NAME`) a reference to another environment's variable. */
export interface VariableInput {
  readonly vaultId: string
  readonly environment: string
  readonly name: string
  readonly value?: string
  readonly ref?: string
  readonly mode: 'add' | 'change' | 'set'
}

/**
 * Writes one variable: `add` refuses a name that has a value, `change` one
 * that has none, `set` (the administrator's `var set`) does either. The
 * plan's storage limit is checked by storage in the write's transaction.
 * Where a second person is required (mustPropose), nothing is written: the
 * value becomes a pending push by this person (`proposed`), for someone else
 * to apply on its review page.
 */
export async function writeVariable(
  d: DomainDeps,
  actor: Actor,
  input: VariableInput,
): Promise<{ vault: VaultAccess; env: EnvironmentInfo; name: string; created: boolean; proposed: ImportRecord | null }> {
  const { vault, env } = await locateEnvironment(d, actor, input.vaultId, input.environment)
  if (!mayAccess(vault, env, 'write')) throw fail.forbidden(writeRefusal(vault.role))
  const name = input.name.trim()
  const np = nameProblem(name)
  if (np) throw fail.invalid(np)
  let stored: string
  if (input.ref !== undefined) {
    const target = parseTarget(input.ref.trim())
    if (typeof target === 'string') throw fail.invalid(target)
    if (!d.hasKey) throw fail.notConfigured()
    await checkNewReference(d, vault, env, name, target)
    stored = referenceForm(target)
  } else {
    const vp = valueProblem(input.value ?? '')
    if (vp) throw fail.invalid(vp)
    stored = input.value as string
  }
  if (mustPropose(actor, vault, env) && actor.kind === 'person') {
    const has = (await d.storage.readCurrent(vault.id, env.name, { values: false })).variables.some((m) => m.name === name)
    if (input.mode === 'add' && has) throw fail.conflict(EXISTS)
    if (input.mode === 'change' && !has) throw fail.notFound(VARIABLE_NOT_FOUND)
    const body = input.ref !== undefined ? { variables: {}, references: { [name]: input.ref.trim() } } : { variables: { [name]: stored } }
    const proposed = await stagePush(d, actor, vault, env, body)
    return { vault, env, name, created: false, proposed }
  }
  const r = await changeEnvironment(d, actor, vault, env, {
    names: [name],
    how: directHow(actor),
    ref: null,
    plan: (current, unreadable) => {
      const has = Object.hasOwn(current, name) || unreadable.has(name)
      if (input.mode === 'add' && has) throw fail.conflict(EXISTS)
      if (input.mode === 'change' && !has) throw fail.notFound(VARIABLE_NOT_FOUND)
      return { [name]: stored }
    },
    log: (names, at) => entryFor(actor, { vaultId: vault.id, action: 'variable_set', at, environment: env.name, names }),
  })
  return { vault, env, name, created: r.entries.some((e) => e.kind === 'added'), proposed: null }
}

/** Deletes one variable. */
export async function deleteVariable(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; environment: string; name: string },
): Promise<{ vault: VaultAccess; env: EnvironmentInfo; proposed: ImportRecord | null }> {
  const { vault, env } = await locateEnvironment(d, actor, input.vaultId, input.environment)
  if (!mayAccess(vault, env, 'write')) throw fail.forbidden(writeRefusal(vault.role))
  if (nameProblem(input.name)) throw fail.notFound(VARIABLE_NOT_FOUND)
  // a second person is required: the deletion becomes a push that deletes the name (issue 25)
  if (mustPropose(actor, vault, env) && actor.kind === 'person') {
    const known = (await d.storage.readCurrent(vault.id, env.name, { values: false })).variables
    if (!known.some((v) => v.name === input.name)) throw fail.notFound(VARIABLE_NOT_FOUND)
    return { vault, env, proposed: await stagePush(d, actor, vault, env, { variables: {} }, [input.name]) }
  }
  if (!d.hasKey) throw fail.notConfigured() // its last value is kept in history, sealed
  const name = input.name
  await changeEnvironment(d, actor, vault, env, {
    names: [name],
    how: directHow(actor),
    ref: null,
    plan: (current, unreadable) => {
      if (!Object.hasOwn(current, name) && !unreadable.has(name)) throw fail.notFound(VARIABLE_NOT_FOUND)
      return { [name]: null }
    },
    log: (names, at) => entryFor(actor, { vaultId: vault.id, action: 'variable_deleted', at, environment: env.name, names }),
  })
  return { vault, env, proposed: null }
}

/** An environment's variables, names and when each was last changed (never values), in name order: any member may see them. */
export async function listVariables(d: DomainDeps, actor: Actor, input: { vaultId: string; environment: string }): Promise<VariableMeta[]> {
  const { vault, env } = await locateEnvironment(d, actor, input.vaultId, input.environment)
  return (await d.storage.readCurrent(vault.id, env.name, { values: false })).variables
}

/** Which of an environment's variables are references, with their targets (for a member who may read it; never a value). */
export async function listReferences(d: DomainDeps, actor: Actor, input: { vaultId: string; environment: string }): Promise<Map<string, ReferenceInfo>> {
  const { vault, env } = await locateEnvironment(d, actor, input.vaultId, input.environment)
  return describeReferences(d, vault, env)
}

/** Names (never values) of an environment's variables. */
export async function listVariableNames(d: DomainDeps, actor: Actor, input: { vaultId: string; environment: string }): Promise<string[]> {
  return (await listVariables(d, actor, input)).map((m) => m.name)
}

function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}

function inNameOrder(list: readonly { name: string }[]): boolean {
  for (let i = 1; i < list.length; i++) if ((list[i - 1] as { name: string }).name >= (list[i] as { name: string }).name) return false
  return true
}

import type { EnvironmentInfo, VaultAccess } from '../adapters/vault-store.js'
import { entryFor, type Actor } from './actor.js'
import { openCurrent } from './changes.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { ciLimitRefusal, mayAccess, roleRefusal } from './permissions.js'
import { ENVIRONMENT_NAME_RE, isReferenceForm, nameProblem, REFERENCE_MARK } from './rules.js'

/**
 * References (issue 24): a variable whose content is "the value of NAME in
 * ENVIRONMENT of the same vault", resolved at every read with the reader's
 * rights. A reference is its own kind of variable, never parsed out of a
 * value: its stored form (sealed like a value, so history, data-key
 * rotation, backups and the storage limit treat it as they treat values)
 * is a NUL character followed by `environment.NAME`. No value can look like
 * that: `valueProblem` refuses values holding NUL (a program's environment
 * cannot carry one), so a pushed or pasted `${X}` or `production.X` stays
 * the literal text it is.
 */

/** How many references a read follows from one variable (a reference to a reference counts two). */
export const MAX_REFERENCE_DEPTH = 5

export interface ReferenceTarget {
  readonly environment: string
  readonly name: string
}

/** The stored form of a reference. */
export function referenceForm(t: ReferenceTarget): string {
  return `${REFERENCE_MARK}${t.environment}.${t.name}`
}

/** The target of a stored form, or null when it is a value. */
export function referenceOf(stored: string): ReferenceTarget | null {
  if (!isReferenceForm(stored)) return null
  const dot = stored.indexOf('.')
  return { environment: stored.slice(1, dot), name: stored.slice(dot + 1) }
}

/** `environment.NAME`, as people write and read a target. */
export function targetText(t: ReferenceTarget): string {
  return `${t.environment}.${t.name}`
}

/** A target as written by a person (`production.DATABASE_URL`), or why it is not one. */
export function parseTarget(text: string): ReferenceTarget | string {
  const dot = text.indexOf('.')
  const environment = dot < 0 ? '' : text.slice(0, dot)
  const name = dot < 0 ? '' : text.slice(dot + 1)
  if (!ENVIRONMENT_NAME_RE.test(environment) || nameProblem(name) !== null)
    return 'a reference names an environment and a variable of it: ENVIRONMENT.NAME, for example production.DATABASE_URL'
  return { environment, name }
}

const NO_USE: ReadonlyMap<string, readonly string[]> = new Map()

/** What a read of stored forms came to: values by name, and the names used in each referenced environment. */
export interface Resolved {
  readonly values: Record<string, string>
  /** referenced environment → names of it that were used, in name order */
  readonly used: ReadonlyMap<string, readonly string[]>
}

interface Hop {
  /** the variable of the environment being read */
  readonly origin: string
  readonly target: ReferenceTarget
  /** every `environment.NAME` visited from origin, to tell a cycle */
  readonly seen: readonly string[]
}

/**
 * Replaces every reference among `stored` (name → stored form, of
 * `env`) by the value it leads to, with the actor's rights now:
 * - a target environment the actor may not read refuses the WHOLE read
 *   (403, naming the variable and the environment), logged as refused in
 *   the environment read and in the one referred to;
 * - a target that no longer exists (or a chain deeper than
 *   MAX_REFERENCE_DEPTH, or a cycle, which writes refuse) fails it with 409.
 * Nothing is logged as read here: the caller logs the read of `env` and of
 * each environment in `used`, before any value leaves. `stored` is the
 * caller's own object (just opened): without references it is the answer.
 */
export async function resolveReferences(
  d: DomainDeps,
  actor: Actor,
  vault: VaultAccess,
  env: EnvironmentInfo,
  stored: Record<string, string>,
): Promise<Resolved> {
  let hops: Hop[] = []
  for (const name in stored) {
    // charCodeAt before referenceOf: a read of 10,000 values looks at one character of each
    if ((stored[name] as string).charCodeAt(0) !== 0) continue
    const target = referenceOf(stored[name] as string)
    if (target !== null) hops.push({ origin: name, target, seen: [`${env.name}.${name}`] })
  }
  // no reference (the common read): the caller's own object is the answer, not a copy of it
  if (hops.length === 0) return { values: stored, used: NO_USE }
  const resolvedAt = new Map<string, string>() // origin → value
  const used = new Map<string, Set<string>>()
  for (let depth = 1; hops.length > 0; depth++) {
    // group this round's targets by environment: one storage read per environment
    const byEnv = new Map<string, Hop[]>()
    for (const h of hops) {
      const here = targetText(h.target)
      if (h.seen.includes(here)) throw fail.conflict(`${h.origin} refers to itself through ${h.seen.slice(1).concat(here).join(' → ')}`)
      if (depth > MAX_REFERENCE_DEPTH) throw fail.conflict(`${h.origin} refers through more than ${MAX_REFERENCE_DEPTH} references`)
      const list = byEnv.get(h.target.environment) ?? []
      list.push(h)
      byEnv.set(h.target.environment, list)
    }
    const next: Hop[] = []
    for (const [envName, list] of byEnv) {
      const targetEnv = vault.environments.find((e) => e.name === envName)
      if (!targetEnv) throw broken(list[0] as Hop)
      if (!mayAccess(vault, targetEnv, 'read')) await refuse(d, actor, vault, env, targetEnv, list)
      const names = [...new Set(list.map((h) => h.target.name))].sort()
      const state = await d.storage.readCurrent(vault.id, envName, { names })
      const opened = await d.crypto.openValues(vault.id, envName, state.variables)
      const usedHere = used.get(envName) ?? new Set<string>()
      used.set(envName, usedHere)
      for (const h of list) {
        if (!Object.hasOwn(opened, h.target.name)) throw broken(h)
        usedHere.add(h.target.name)
        const form = opened[h.target.name] as string
        const further = referenceOf(form)
        if (further === null) resolvedAt.set(h.origin, form)
        else next.push({ origin: h.origin, target: further, seen: [...h.seen, targetText(h.target)] })
      }
    }
    hops = next
  }
  // in the order of `stored` (name order), values and resolved references alike
  const ordered: Record<string, string> = {}
  for (const name of Object.keys(stored)) ordered[name] = (resolvedAt.get(name) ?? stored[name]) as string
  return { values: ordered, used: new Map([...used].map(([k, v]) => [k, [...v].sort()])) }
}

function broken(h: Hop): Error {
  return fail.conflict(`${h.origin} refers to ${targetText(h.target)}, which does not exist: the reference is broken (change or delete ${h.origin})`)
}

async function refuse(d: DomainDeps, actor: Actor, vault: VaultAccess, env: EnvironmentInfo, targetEnv: EnvironmentInfo, list: readonly Hop[]): Promise<never> {
  const at = d.now()
  const origins = [...new Set(list.map((h) => h.origin))].sort()
  const targets = [...new Set(list.map((h) => h.target.name))].sort()
  await d.storage.appendAccessLog(entryFor(actor, { vaultId: vault.id, action: 'refused', at, environment: env.name, names: origins }))
  await d.storage.appendAccessLog(entryFor(actor, { vaultId: vault.id, action: 'refused', at, environment: targetEnv.name, names: targets }))
  const why = ciLimitRefusal(vault, targetEnv) ?? roleRefusal(vault.role, targetEnv, 'read')
  const first = list[0] as Hop
  throw fail.forbidden(`${first.origin} refers to ${targetText(first.target)}, in ${targetEnv.name}, and ${why}`)
}

/**
 * Checks a reference about to be written as `name` of `env`: its target must
 * be in another environment of the vault that the writer may read, exist,
 * and lead to a value within MAX_REFERENCE_DEPTH references without coming
 * back to `env.name`. Reads no value out (nothing is logged): it only
 * follows stored forms.
 */
export async function checkNewReference(d: DomainDeps, vault: VaultAccess, env: EnvironmentInfo, name: string, target: ReferenceTarget): Promise<void> {
  if (target.environment === env.name) throw fail.invalid('a reference refers to a variable of another environment of the vault')
  const seen = [`${env.name}.${name}`]
  let t: ReferenceTarget = target
  for (let depth = 1; ; depth++) {
    const here = targetText(t)
    if (seen.includes(here)) throw fail.conflict(`${name} would refer to itself through ${seen.slice(1).concat(here).join(' → ')}: a cycle`)
    if (depth > MAX_REFERENCE_DEPTH) throw fail.conflict(`${name} would refer through more than ${MAX_REFERENCE_DEPTH} references`)
    const targetEnv = vault.environments.find((e) => e.name === t.environment)
    if (!targetEnv) throw fail.conflict(`${here} does not exist: a reference must refer to an existing variable`)
    if (!mayAccess(vault, targetEnv, 'read')) throw fail.forbidden(`you may refer only to what you may read, and ${roleRefusal(vault.role, targetEnv, 'read')}`)
    const state = await d.storage.readCurrent(vault.id, t.environment, { names: [t.name] })
    const opened = await d.crypto.openValues(vault.id, t.environment, state.variables)
    if (!Object.hasOwn(opened, t.name)) throw fail.conflict(`${here} does not exist: a reference must refer to an existing variable`)
    const further = referenceOf(opened[t.name] as string)
    if (further === null) return
    seen.push(here)
    t = further
  }
}

/** A reference as the Variables page shows it: its target, and whether that still exists (never a value). */
export interface ReferenceInfo {
  readonly target: string
  readonly broken: boolean
}

/**
 * Which variables of `env` are references, for a member who may read it
 * (anyone else: none shown). Stored forms are opened only to tell the two
 * kinds apart; no value leaves, so it is not logged as a read. A target is
 * broken when its environment or its name no longer exists.
 */
export async function describeReferences(d: DomainDeps, vault: VaultAccess, env: EnvironmentInfo): Promise<Map<string, ReferenceInfo>> {
  const out = new Map<string, ReferenceInfo>()
  if (!d.hasKey || !mayAccess(vault, env, 'read')) return out
  const state = await d.storage.readCurrent(vault.id, env.name)
  // a value that no longer opens is simply not shown as a reference: the page lists it still
  const { values: stored } = await openCurrent(d, vault.id, env.name, state.variables)
  const names = new Map<string, Set<string>>()
  for (const [name, form] of Object.entries(stored)) {
    const t = referenceOf(form)
    if (t === null) continue
    let present = names.get(t.environment)
    if (!present) {
      const exists = vault.environments.some((e) => e.name === t.environment)
      present = new Set(exists ? (await d.storage.readCurrent(vault.id, t.environment, { values: false })).variables.map((m) => m.name) : [])
      names.set(t.environment, present)
    }
    out.set(name, { target: targetText(t), broken: !present.has(t.name) })
  }
  return out
}

import type { OverrideRow } from '../adapters/override-store.js'
import type { EnvironmentInfo, VaultAccess } from '../adapters/vault-store.js'
import { entryFor, type Actor, type PersonActor } from './actor.js'
import { isCiPrincipal } from './ci-vault.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { mayAccess, requireOwner, roleRefusal } from './permissions.js'
import { nameProblem, valueProblem } from './rules.js'
import { environmentOf, locateEnvironment, locateVault } from './vaults.js'

/**
 * Personal overrides (issue 24): where an environment's owners allow it
 * (never on an owners-only environment), a person may keep their own value
 * for one of its variables. It is used for that person's reads only (the
 * CLI's pull/run/get, Reveal), never for anyone else's, a CI identity's or
 * the server administrator's; sealed like values, bound to the person.
 */

export const OVERRIDES_OWNERS_ONLY = 'personal overrides are never available on owners-only environments'

/** Whether `actor` is a person whose reads may use their own overrides (not a CI identity, not the administrator). */
function overridingPerson(actor: Actor): actor is PersonActor {
  return actor.kind === 'person' && !isCiPrincipal(actor.personId)
}

/**
 * The actor's overrides applied to `values` (an environment's, as read):
 * each replaces the value of a name the environment has; names it does not
 * have are left out. Returns the names that came from overrides.
 */
/** The reader's own overrides of this environment, or null when none can apply (not a person's read, owners-only, not allowed, none). */
export async function ownOverrides(d: DomainDeps, actor: Actor, vault: VaultAccess, env: EnvironmentInfo): Promise<OverrideRow[] | null> {
  if (!overridingPerson(actor) || env.ownersOnly) return null
  const { allowed, overrides } = await d.storage.readOverrides(vault.id, env.name, actor.personId)
  return allowed && overrides.length > 0 ? overrides : null
}

/** Puts the reader's own overrides (`own`, as ownOverrides answered; read here when not given) into `values`; the names overridden, in order. */
export async function applyOverrides(
  d: DomainDeps,
  actor: Actor,
  vault: VaultAccess,
  env: EnvironmentInfo,
  values: Record<string, string>,
  own?: OverrideRow[] | null,
): Promise<string[]> {
  const rows = own === undefined ? await ownOverrides(d, actor, vault, env) : own
  if (!rows || !overridingPerson(actor)) return []
  const mine = rows.filter((o) => Object.hasOwn(values, o.name))
  if (mine.length === 0) return []
  const opened = await d.crypto.openOverrides(vault.id, env.name, actor.personId, mine)
  for (const name of Object.keys(opened)) values[name] = opened[name] as string
  return Object.keys(opened).sort()
}

/** Turns "Allow personal overrides" on or off (owners); off deletes every override of the environment. */
export async function allowOverrides(d: DomainDeps, actor: Actor, input: { vaultId: string; environment: string; allow: boolean }): Promise<void> {
  const vault = await locateVault(d, actor, input.vaultId)
  requireOwner(vault, 'change environments')
  const env = environmentOf(vault, input.environment)
  if (input.allow && env.ownersOnly) throw fail.invalid(OVERRIDES_OWNERS_ONLY)
  await d.storage.changeOverride(
    { kind: 'allow', vaultId: vault.id, environment: env.name, allow: input.allow },
    entryFor(actor, {
      vaultId: vault.id,
      action: 'environment_changed',
      at: d.now(),
      environment: env.name,
      detail: `personal overrides: ${input.allow ? 'on' : 'off'}`,
    }),
  )
}

/** Sets (`value`) or removes (`null`) the person's own value of one variable of an environment that allows it. */
export async function setOverride(
  d: DomainDeps,
  actor: PersonActor,
  input: { vaultId: string; environment: string; name: string; value: string | null },
): Promise<{ vault: VaultAccess; env: EnvironmentInfo; removed: boolean }> {
  const { vault, env } = await locateEnvironment(d, actor, input.vaultId, input.environment)
  if (isCiPrincipal(actor.personId)) throw fail.forbidden('a CI identity has no personal overrides')
  if (!mayAccess(vault, env, 'read')) throw fail.forbidden(roleRefusal(vault.role, env, 'override values in'))
  if (env.ownersOnly) throw fail.conflict(OVERRIDES_OWNERS_ONLY)
  const name = input.name.trim()
  const np = nameProblem(name)
  if (np) throw fail.invalid(np)
  const at = d.now()
  if (input.value === null) {
    const r = await d.storage.changeOverride(
      { kind: 'set', vaultId: vault.id, environment: env.name, personId: actor.personId, name, sealed: null, now: at },
      entryFor(actor, { vaultId: vault.id, action: 'override_deleted', at, environment: env.name, names: [name] }),
    )
    if (!r.ok) throw fail.notFound('you have no override of that variable in this environment')
    return { vault, env, removed: true }
  }
  const vp = valueProblem(input.value)
  if (vp) throw fail.invalid(vp)
  const names = (await d.storage.readCurrent(vault.id, env.name, { values: false })).variables
  if (!names.some((m) => m.name === name)) throw fail.notFound('that variable does not exist in this environment; an override replaces an existing one')
  const sealed = await d.crypto.sealOverride(vault.id, env.name, name, actor.personId, input.value)
  const r = await d.storage.changeOverride(
    { kind: 'set', vaultId: vault.id, environment: env.name, personId: actor.personId, name, sealed, now: at },
    entryFor(actor, { vaultId: vault.id, action: 'override_set', at, environment: env.name, names: [name] }),
  )
  if (!r.ok) throw fail.conflict("this environment's owners do not allow personal overrides")
  return { vault, env, removed: false }
}

/** What the Variables page shows of overrides (never a value). */
export interface OverridesView {
  readonly allowed: boolean
  /** names the actor overrides */
  readonly mine: readonly string[]
  /** for owners: name → the people who override it; empty for anyone else */
  readonly byName: ReadonlyMap<string, readonly string[]>
}

export async function describeOverrides(d: DomainDeps, actor: Actor, input: { vaultId: string; environment: string }): Promise<OverridesView> {
  const { vault, env } = await locateEnvironment(d, actor, input.vaultId, input.environment)
  if (env.ownersOnly) return { allowed: false, mine: [], byName: new Map() }
  const { allowed, overrides } = await d.storage.readOverrides(vault.id, env.name)
  const me = actor.kind === 'person' ? actor.personId : null
  const byName = new Map<string, string[]>()
  if (vault.role === 'owner') for (const o of overrides) byName.set(o.name, [...(byName.get(o.name) ?? []), o.personId])
  return { allowed, mine: overrides.filter((o) => o.personId === me).map((o) => o.name), byName }
}

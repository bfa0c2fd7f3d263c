import { createHash } from 'node:crypto'
import type { EnvironmentInfo, VaultAccess } from '../adapters/vault-store.js'
import type { Actor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { type JsonRead, logRead, readEnvironmentJson, type Located, type ReadResult } from './variables.js'
import { mayAccess } from './permissions.js'
import { locateEnvironment } from './vaults.js'

/**
 * Cheap checks for `envkeep run --watch` (issue 24, item 3): every read
 * answers a tag of everything its values depend on, and a read that sends
 * the tag it has is answered "not modified" without opening any value when
 * the tag still holds. The tag is a hash of the versions of every
 * environment of the vault (a reference may lead into any of them; a
 * data-key rotation changes them all), the reader's rights (role, which
 * environments are owners-only, a CI identity's list) and the reader's own
 * personal overrides (their sealed bytes, never opened). Rights are checked
 * and the read is logged (names of the environment read) as for any read.
 */
export async function environmentTag(d: DomainDeps, actor: Actor, vault: VaultAccess, env: EnvironmentInfo): Promise<{ tag: string; names: string[] }> {
  const h = createHash('sha256')
  const part = (s: string) => h.update(`${s.length}:${s}`)
  part(vault.id)
  part(env.name)
  part(vault.role)
  part(JSON.stringify((vault as { readonly ciEnvironments?: readonly string[] | null }).ciEnvironments ?? null))
  let names: string[] = []
  for (const e of vault.environments) {
    const state = await d.storage.readCurrent(vault.id, e.name, e.name === env.name ? {} : { names: [] })
    if (e.name === env.name) names = state.variables.map((v) => v.name)
    part(`${e.name}=${state.version}${e.ownersOnly ? ' owners-only' : ''}`)
  }
  if (actor.kind === 'person' && !env.ownersOnly) {
    const { allowed, overrides } = await d.storage.readOverrides(vault.id, env.name, actor.personId)
    part(`overrides ${allowed}`)
    for (const o of overrides) {
      part(o.name)
      h.update(o.sealed)
    }
  }
  return { tag: h.digest('base64url').slice(0, 32), names }
}

export type ConditionalRead =
  | ((ReadResult | JsonRead) & { readonly tag: string | null; readonly notModified: false })
  | { readonly tag: string; readonly notModified: true }

/**
 * A read of an environment; with `ifTag` (the tag the caller has, or any
 * string for a first read) the answer carries the tag, taken BEFORE the
 * values are read (a change in between only makes the next check read
 * again), and when the tag still holds the answer is "not modified", logged
 * as a read with the environment's names, no value opened. Without
 * `ifTag` it is the plain read (no tag computed: the hot path stays as it is).
 */
export async function readEnvironmentIfChanged(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; environment: string; ifTag: string | null },
  located?: Located,
): Promise<ConditionalRead> {
  const target = { vaultId: input.vaultId, environment: input.environment }
  if (input.ifTag === null) return { ...(await readEnvironmentJson(d, actor, target, located)), tag: null, notModified: false }
  const { vault, env } = await locateEnvironment(d, actor, input.vaultId, input.environment)
  // refused (and logged as refused) by the plain read, as every read
  if (!mayAccess(vault, env, 'read')) return { ...(await readEnvironmentJson(d, actor, target, located)), tag: null, notModified: false }
  located?.(vault, env)
  if (!d.hasKey) throw fail.notConfigured()
  const now = await environmentTag(d, actor, vault, env)
  if (now.tag === input.ifTag) {
    await logRead(d, actor, vault.id, env.name, now.names)
    return { tag: now.tag, notModified: true }
  }
  return { ...(await readEnvironmentJson(d, actor, target)), tag: now.tag, notModified: false }
}

import { randomUUID } from 'node:crypto'
import { ciIdentityIdOf, ciPrincipal, type CiIdentityRecord, type NewCiSignIn } from '../adapters/ci-identity-store.js'
import type { ChangeResult } from '../adapters/results.js'
import { sameVaultName } from './vault-admin.js'
import type { VaultAccess, VaultStore } from '../adapters/vault-store.js'
import { issuerProblem } from '../oauth/workload/issuer-url.js'
import { subjectPatternProblem } from '../oauth/workload/subject-pattern.js'
import { entryFor, type Actor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'
import { canReadEnvironment, requireOwner } from './permissions.js'
import { locateVault, VAULT_NOT_FOUND } from './vaults.js'
import { ciVault, isCiPrincipal, type CiVaultAccess } from './ci-vault.js'

// how a CI identity reaches its vault lives in ci-vault.ts (vaults.ts locates through it)
export { ciVault, isCiPrincipal, type CiVaultAccess }

/**
 * CI identities ("CI access"): which CI runs may read a vault with no stored
 * secret. Only owners (and the administrator) add, list and remove them. A
 * CI identity reads with its role, limited to its environments when it has
 * a list; it is never a member, never pushes, never decides, never uses the pages.
 */

export const CI_IDENTITY_NOT_FOUND = 'that CI identity does not exist in this vault'

/** Presets for the issuers people use most; `issuer` may also be any https OIDC issuer. */
export const CI_ISSUER_PRESETS: Readonly<Record<string, string>> = Object.freeze({
  github: 'https://token.actions.githubusercontent.com',
  gitlab: 'https://gitlab.com',
})

const CLAIM_NAME_RE = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/
/** Claims verified by the exchange itself: never "required claims" */
const RESERVED_CLAIMS = new Set(['iss', 'aud', 'sub', 'exp', 'nbf', 'iat', 'jti'])

export interface NewCiIdentityInput {
  readonly vaultId: string
  readonly name: string
  /** an https issuer URL, or a preset name (`github`, `gitlab`) */
  readonly issuer: string
  readonly audience: string
  readonly subjectPattern: string
  readonly requiredClaims?: Readonly<Record<string, string>>
  readonly role: string
  /** null or empty: every environment the role reads */
  readonly environments?: readonly string[] | null
}

/** Why a CI identity's settings are refused, in words; the checked record otherwise. */
function checked(d: DomainDeps, vault: VaultAccess, input: NewCiIdentityInput): Omit<CiIdentityRecord, 'id' | 'vaultId' | 'createdAt'> {
  const name = input.name.trim()
  if (name.length < 1 || name.length > 100 || /[\u0000-\u001f\u007f]/.test(name)) throw fail.invalid('a CI identity needs a name of 1 to 100 characters')
  const issuer = CI_ISSUER_PRESETS[input.issuer] ?? input.issuer.trim()
  const issuerWhy = issuerProblem(issuer, d.ciAllowHttpLoopback === true)
  if (issuerWhy) throw fail.invalid(issuerWhy)
  const audience = input.audience.trim()
  if (audience.length < 1 || audience.length > 512) throw fail.invalid('the audience must be 1 to 512 characters')
  const subjectPattern = input.subjectPattern.trim()
  const patternWhy = subjectPatternProblem(subjectPattern)
  if (patternWhy) throw fail.invalid(patternWhy)
  const requiredClaims: Record<string, string> = {}
  for (const [k, v] of Object.entries(input.requiredClaims ?? {})) {
    if (!CLAIM_NAME_RE.test(k) || RESERVED_CLAIMS.has(k))
      throw fail.invalid('a required claim must be named like ref or environment (not iss, aud, sub or a time)')
    if (typeof v !== 'string' || v.length < 1 || v.length > 512) throw fail.invalid('a required claim needs a value of 1 to 512 characters')
    requiredClaims[k] = v
  }
  if (input.role !== 'editor' && input.role !== 'owner') throw fail.invalid('a CI identity reads as editor or owner')
  const role = input.role
  let environments: string[] | null = null
  if (input.environments && input.environments.length > 0) {
    environments = [...new Set(input.environments.map((e) => e.trim()))].sort()
    for (const e of environments) {
      const env = vault.environments.find((x) => x.name === e)
      if (!env) throw fail.invalid('an environment in the list does not exist in this vault')
      if (!canReadEnvironment(role, env)) throw fail.invalid(`the role ${role} cannot read owners-only environments: choose owner, or leave them out`)
    }
  }
  return { name, issuer, audience, subjectPattern, requiredClaims, role, environments }
}

export async function addCiIdentity(d: DomainDeps, actor: Actor, input: NewCiIdentityInput): Promise<CiIdentityRecord> {
  const vault = await locateVault(d, actor, input.vaultId)
  requireOwner(vault, 'add CI identities')
  const c = checked(d, vault, input)
  const id = randomUUID()
  const now = d.now()
  const r = await d.storage.changeCiIdentity(
    { kind: 'create', identity: { id, vaultId: vault.id, ...c, now } },
    entryFor(actor, { vaultId: vault.id, action: 'member_added', at: now, subject: ciPrincipal(id), detail: `${c.role} (CI: ${c.name})` }),
  )
  if (!r.ok) throw r.reason === 'name_taken' ? fail.conflict('this vault has a CI identity by that name already') : fail.notFound(VAULT_NOT_FOUND)
  return r.value
}

export async function listCiIdentities(d: DomainDeps, actor: Actor, vaultId: string): Promise<CiIdentityRecord[]> {
  const vault = await locateVault(d, actor, vaultId)
  requireOwner(vault, 'see CI identities')
  return d.storage.findCiIdentities({ vaultId: vault.id })
}

/** Removes a CI identity by id or exact name; its live tokens stop at once. */
export async function removeCiIdentity(d: DomainDeps, actor: Actor, input: { vaultId: string; identity: string }): Promise<CiIdentityRecord> {
  const vault = await locateVault(d, actor, input.vaultId)
  requireOwner(vault, 'remove CI identities')
  const all = await d.storage.findCiIdentities({ vaultId: vault.id })
  const found = all.find((i) => i.id === input.identity) ?? all.find((i) => i.name.toLowerCase() === input.identity.trim().toLowerCase())
  if (!found) throw fail.notFound(CI_IDENTITY_NOT_FOUND)
  const now = d.now()
  const removed = await d.storage.changeCiIdentity(
    { kind: 'remove', vaultId: vault.id, id: found.id, now },
    entryFor(actor, { vaultId: vault.id, action: 'member_removed', at: now, subject: ciPrincipal(found.id), detail: `CI: ${found.name}` }),
  )
  if (!removed.ok) throw fail.notFound(CI_IDENTITY_NOT_FOUND)
  return found
}

/**
 * Ends the CI identities `personId` added to a vault, once they are no longer one of its
 * owners (demoted or removed). Ending rather than flagging: an identity says which CI runs
 * may read, and the person who chose that (a repository they may control, a branch they
 * may push to) should not keep a way in after they lose the right to decide it. Who added
 * an identity is its `member_added` entry in the access log; each ending is logged
 * (`member_removed`, saying why) and its live tokens stop at once. Identities the
 * administrator added belong to no person and stay.
 */
export async function endCiIdentitiesAddedBy(d: DomainDeps, actor: Actor, vaultId: string, personId: string): Promise<string[]> {
  const identities = await d.storage.findCiIdentities({ vaultId })
  if (identities.length === 0) return []
  const adders = await ciIdentityAdders(d.storage, vaultId)
  const ended: string[] = []
  for (const identity of identities) {
    if (adders.get(identity.id) !== personId) continue
    const now = d.now()
    const removed = await d.storage.changeCiIdentity(
      { kind: 'remove', vaultId, id: identity.id, now },
      entryFor(actor, {
        vaultId,
        action: 'member_removed',
        at: now,
        subject: ciPrincipal(identity.id),
        detail: `CI: ${identity.name} (ended: the owner who added it is no longer an owner)`,
      }),
    )
    if (removed.ok) ended.push(identity.name)
  }
  return ended
}

/** Who added each CI identity of a vault (its `member_added` entry): identity id → person id, or null for the administrator. */
export async function ciIdentityAdders(storage: Pick<VaultStore, 'listAccessLog'>, vaultId: string): Promise<Map<string, string | null>> {
  const adders = new Map<string, string | null>()
  let before: number | undefined
  for (;;) {
    const page = await storage.listAccessLog(vaultId, { action: 'member_added', limit: 500, ...(before === undefined ? {} : { before }) })
    for (const e of page) if (e.subject && isCiPrincipal(e.subject)) adders.set(ciIdentityIdOf(e.subject) as string, e.personId)
    if (page.length < 500) return adders
    before = page[page.length - 1]?.id
  }
}

/**
 * Whether a CI identity may still sign in: the person who added it is still an owner of its
 * vault (or the administrator added it). Checked at every exchange, beside the ending on a
 * demotion, so an identity whose owner lost the role by any path never signs in again.
 */
export async function ciIdentityOwnerStays(storage: Pick<VaultStore, 'listAccessLog' | 'listMembers'>, identity: CiIdentityRecord): Promise<boolean> {
  const adder = (await ciIdentityAdders(storage, identity.vaultId)).get(identity.id) ?? null
  if (adder === null) return true
  return (await storage.listMembers(identity.vaultId)).some((m) => m.personId === adder && m.role === 'owner')
}

/** The CI identities trusting exactly this issuer, of every vault (the token exchange's first step). */
export function ciIdentitiesTrusting(d: Pick<DomainDeps, 'storage'>, issuer: string): Promise<CiIdentityRecord[]> {
  return d.storage.findCiIdentities({ issuer })
}

/** The identities among `matches` that belong to the vault `ref` names: its id, else its name (case-insensitive). */
export async function ciIdentitiesOfVault(d: Pick<DomainDeps, 'storage'>, matches: readonly CiIdentityRecord[], ref: string): Promise<CiIdentityRecord[]> {
  const byId = matches.filter((i) => i.vaultId === ref.toLowerCase())
  if (byId.length > 0) return byId
  const named: CiIdentityRecord[] = []
  for (const vaultId of new Set(matches.map((i) => i.vaultId))) {
    const [vault] = await d.storage.findVaults({ id: vaultId })
    if (vault && sameVaultName(vault.name, ref)) named.push(...matches.filter((i) => i.vaultId === vaultId))
  }
  return named
}

/** Signs a CI run in (its identity token used once): refused with 'replayed' when that token was exchanged before. */
export function issueCiSignIn(d: Pick<DomainDeps, 'storage'>, input: NewCiSignIn): Promise<ChangeResult<'replayed'>> {
  return d.storage.issueCiSignIn(input)
}

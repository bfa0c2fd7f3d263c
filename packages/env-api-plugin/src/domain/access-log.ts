import type { AccessAction, AccessLogRow, Role } from '../adapters/vault-store.js'
import { type Actor, entryFor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { locateVault } from './vaults.js'

/**
 * Reading a vault's access log: every member may (names and who, never
 * values). Which entry each change writes is decided where the change is
 * made (vaults, members, environments, variables, pushes) and written by
 * storage in the change's own transaction.
 */
export async function listAccessLog(
  d: DomainDeps,
  actor: Actor,
  input: { vaultId: string; environment?: string; action?: AccessAction; before?: number; personId?: string; limit: number },
): Promise<AccessLogRow[]> {
  const vault = await locateVault(d, actor, input.vaultId)
  const { vaultId: _vaultId, personId, ...filter } = input
  const shown = (rows: readonly AccessLogRow[]): AccessLogRow[] => rows.map((e) => shownAccessEntry(e, vault.role))
  if (!personId) return shown(await d.storage.listAccessLog(vault.id, filter))
  // a person filter reads further back (entries of others are skipped), at most PERSON_ROUNDS pages
  const wanted: AccessLogRow[] = []
  let before = filter.before
  for (let round = 0; round < PERSON_ROUNDS && wanted.length < filter.limit; round++) {
    const page = await d.storage.listAccessLog(vault.id, { ...filter, ...(before ? { before } : {}) })
    wanted.push(...page.filter((l) => l.personId === personId))
    if (page.length < filter.limit) break
    before = page[page.length - 1]?.id
  }
  return shown(wanted.slice(0, filter.limit))
}

/**
 * Records in a vault's access log what a surface did that changes nothing
 * (a refusal, names listed through the MCP endpoint), as `actor`, now.
 */
export async function recordAccess(
  d: DomainDeps,
  actor: Actor,
  e: { vaultId: string; action: AccessAction; environment: string; names: readonly string[]; detail: string },
): Promise<void> {
  await d.storage.appendAccessLog(entryFor(actor, { ...e, at: d.now() }))
}

const INVITATION_ACTIONS: readonly string[] = ['invitation_sent', 'invitation_revoked']

/** The `detail` of an invitation's log entry: the role, then the email (never the link or token). */
export function invitationDetail(role: string, email: string): string {
  return `${role}: ${email}`
}

/**
 * An access-log entry as a member with `role` may see it (issue 25): an invitation's email is
 * shown to owners only (they sent it; others learn that someone was invited, and the role).
 */
export function shownAccessEntry<E extends { readonly action: string; readonly detail: string | null }>(entry: E, role: Role): E {
  if (role === 'owner' || !INVITATION_ACTIONS.includes(entry.action) || entry.detail === null) return entry
  return { ...entry, detail: `${entry.detail.split(':')[0]}: email shown to owners` }
}

/** How many pages of the log a person filter reads at most. */
const PERSON_ROUNDS = 10

import { doneValue } from '../adapters/results.js'
import type { SignInRecord } from '../adapters/oauth-store.js'
import { requireAdministrator, type AdministratorActor, type PersonActor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'

/** A person's command-line sign-ins (the pages' Sign-ins): theirs only, each revocable by them; all of them by the administrator. */

export const SIGN_IN_NOT_FOUND = 'this sign-in does not exist, is not yours or is already revoked'

/** How a sign-in stands at `now`, as the Sign-ins page shows it. */
export function signInState(s: Pick<SignInRecord, 'revokedAt' | 'expiresAt'>, now: Date): 'revoked' | 'ended' | 'active' {
  if (s.revokedAt) return 'revoked'
  return s.expiresAt.getTime() <= now.getTime() ? 'ended' : 'active'
}

/** The actor's own sign-ins, newest first. */
export async function listSignIns(d: DomainDeps, actor: PersonActor): Promise<SignInRecord[]> {
  return d.storage.listSignIns(actor.personId)
}

/** Revokes one of the actor's own sign-ins; not_found when it is not theirs or is revoked already. */
export async function revokeSignIn(d: DomainDeps, actor: PersonActor, signInId: string): Promise<void> {
  if (signInId === '' || doneValue(await d.storage.revokeSignIns({ personId: actor.personId, signInId }, d.now())) === 0)
    throw fail.notFound(SIGN_IN_NOT_FOUND, 'the sign-in')
}

/** Revokes every sign-in of the actor's own ("sign out everywhere"); how many were live. */
export async function revokeOwnSignIns(d: DomainDeps, actor: PersonActor): Promise<number> {
  return doneValue(await d.storage.revokeSignIns({ personId: actor.personId }, d.now()))
}

/** Revokes every sign-in of a person (the administrator's `signins revoke`); how many were live. */
export async function revokeAllSignIns(d: DomainDeps, actor: AdministratorActor, personId: string): Promise<number> {
  requireAdministrator(actor, 'revoke the sign-ins of a person')
  return doneValue(await d.storage.revokeSignIns({ personId }, d.now()))
}

/**
 * The names of the registered (MCP) clients among the sign-ins, by client id, from the client
 * registration store (no request made); clients it does not know are left out.
 */
export async function clientNamesOf(d: Pick<DomainDeps, 'storage'>, signIns: readonly SignInRecord[]): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  const find = d.storage.findClientRegistration?.bind(d.storage)
  if (!find) return out
  for (const id of new Set(signIns.map((s) => s.clientId))) {
    const r = await find(id)
    if (r) out.set(id, r.name)
  }
  return out
}

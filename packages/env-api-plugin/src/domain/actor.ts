import type { AccessAction, AccessLogEntry } from '../adapters/vault-store.js'
import { fail } from './failure.js'

/**
 * Who asks: a person (through a CLI sign-in or the pages), or the server
 * administrator (the admin commands of `envkeep-server`, which act with an
 * owner's rights in every vault and are logged as nobody's: decisions.md,
 * "admin changes").
 */
export type Actor = PersonActor | AdministratorActor

export interface PersonActor {
  readonly kind: 'person'
  readonly personId: string
  /** the CLI sign-in used; null on the pages */
  readonly signInId: string | null
  /** the OAuth client used; null on the pages */
  readonly clientId: string | null
  readonly address: string | null
  /** a CI sign-in's identity, subject and run, written as the `detail` of its log entries */
  readonly label?: string | null
}

export interface AdministratorActor {
  readonly kind: 'administrator'
}

/** The client id the administrator's changes are logged under. */
export const ADMINISTRATOR_CLIENT = 'envkeep-server'

export const ADMINISTRATOR: AdministratorActor = Object.freeze({ kind: 'administrator' })

export function personActor(p: {
  personId: string
  signInId?: string | null
  clientId?: string | null
  address?: string | null
  label?: string | null
}): PersonActor {
  const actor = { kind: 'person' as const, personId: p.personId, signInId: p.signInId ?? null, clientId: p.clientId ?? null, address: p.address ?? null }
  return p.label ? { ...actor, label: p.label } : actor
}

/** Refuses anyone but the server administrator (the admin commands' own operations). */
export function requireAdministrator(actor: Actor, what: string): void {
  if (actor.kind !== 'administrator') throw fail.forbidden(`only the server administrator can ${what}`)
}

/** The person id to record as the author of a change; null for the administrator. */
export function authorOf(actor: Actor): string | null {
  return actor.kind === 'person' ? actor.personId : null
}

/** The access-log entry of something `actor` did. Names only, never values. */
export function entryFor(
  actor: Actor,
  e: {
    vaultId: string
    action: AccessAction
    at: Date
    environment?: string | null
    names?: readonly string[]
    subject?: string | null
    detail?: string | null
  },
): AccessLogEntry {
  const who =
    actor.kind === 'person'
      ? { personId: actor.personId, signInId: actor.signInId, clientId: actor.clientId, address: actor.address }
      : { personId: null, signInId: null, clientId: ADMINISTRATOR_CLIENT, address: null }
  return {
    vaultId: e.vaultId,
    at: e.at,
    ...who,
    action: e.action,
    environment: e.environment ?? null,
    names: e.names ?? [],
    subject: e.subject ?? null,
    detail: e.detail ?? (actor.kind === 'person' ? (actor.label ?? null) : null),
  }
}

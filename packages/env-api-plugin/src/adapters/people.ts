import type { FastifyRequest } from 'fastify'

/** A person as the plugin knows them. */
export interface Person {
  readonly id: string
  readonly email: string
  readonly name: string
}

/**
 * Who the people are, and who is signed in on the web pages. The host app
 * (or the self-hosting server's local accounts) implements it.
 */
export interface PeopleAdapter {
  /** The person signed in on this browser request, or null. Never throws for "not signed in". */
  currentPerson(request: FastifyRequest): Promise<Person | null>
  /** Where to send a browser to sign in, returning to `returnTo` (a path on this service) after. */
  signInUrl(returnTo: string): string
  /** Optional: where a signed-in person goes to sign out; the pages then show a "Sign out" link. */
  signOutUrl?(): string
  /**
   * Optional, and strongly advised: a secret unique to this browser's sign-in (e.g. the value
   * of the session cookie), or null when signed out. The pages' CSRF tokens are bound to it,
   * so a CSRF cookie planted by a sibling origin yields no usable token. Never logged or sent.
   */
  sessionBinding?(request: FastifyRequest): string | null
  /** A person by id, or null. */
  getPerson(id: string): Promise<Person | null>
  /** A person by email (case-insensitive), or null. */
  findPersonByEmail(email: string): Promise<Person | null>
}

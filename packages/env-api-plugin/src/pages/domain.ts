import type { FastifyRequest } from 'fastify'
import type { Person } from '../adapters/people.js'
import { personActor, type PersonActor } from '../domain/actor.js'
import { DomainFailure } from '../domain/failure.js'
import { withFailuresAs, type Domain } from '../domain/index.js'
import { createDomainFor } from '../domain-for.js'
import type { Where } from '../errors.js'
import type { PageDeps } from './context.js'
import { pageError } from './error.js'

const NOT_SHARED = "database (only what's shared with you is visible)" as const

/** How a refusal of the domain layer shows on a page: status and where. */
const PAGE_STATUS: Readonly<Record<DomainFailure['kind'], readonly [number, Where]>> = Object.freeze({
  not_found: [404, NOT_SHARED],
  forbidden: [403, 'database (your role)'],
  invalid: [400, 'web app'],
  conflict: [409, 'web app'],
  // a page cannot be "insufficient storage": the person is refused what the plan does not allow
  storage_limit: [403, 'web app'],
})

/** A refusal of the domain layer as a page error; anything else unchanged. */
export function pageErrorOf(err: unknown): unknown {
  if (!(err instanceof DomainFailure)) return err
  const [status, where] = PAGE_STATUS[err.kind]
  return pageError(status, where, err.reason)
}

/** The domain layer for the pages: its refusals already page errors. */
export function pageDomain(deps: PageDeps): Domain {
  const o = deps.opts
  return withFailuresAs(createDomainFor(o, deps.crypto), pageErrorOf)
}

/** The signed-in person at this browser, as the domain layer knows them. */
export function pageActor(person: Person, request: FastifyRequest): PersonActor {
  return personActor({ personId: person.id, address: request.ip ?? null })
}

import type { FastifyRequest } from 'fastify'
import type { Person } from '../adapters/people.js'
import { personActor, type PersonActor } from '../domain/actor.js'
import { DomainFailure } from '../domain/failure.js'
import { withFailuresAs, type Domain } from '../domain/index.js'
import type { Where } from '../errors.js'
import { pageError } from './error.js'

const NOT_SHARED = "database (only what's shared with you is visible)" as const

/** How a refusal of the domain layer shows on a page: status and where. */
const PAGE_STATUS: Readonly<Partial<Record<DomainFailure['kind'], readonly [number, Where]>>> = Object.freeze({
  not_found: [404, NOT_SHARED],
  forbidden: [403, 'database (your role)'],
  invalid: [400, 'web app'],
  conflict: [409, 'web app'],
  // a page cannot be "insufficient storage": the person is refused what the plan does not allow
  storage_limit: [403, 'web app'],
})

/** A refusal of the domain layer as a page error; anything else (the keys' failures included: failure-class.ts) unchanged. */
export function pageErrorOf(err: unknown): unknown {
  const shown = err instanceof DomainFailure ? PAGE_STATUS[err.kind] : undefined
  if (!shown) return err
  const [status, where] = shown
  return pageError(status, where, (err as DomainFailure).reason)
}

/** The core's domain for the pages, built once: its refusals already page errors. */
export function pagesDomain(domain: Domain): Domain {
  return withFailuresAs(domain, pageErrorOf)
}

/** The domain layer of the pages (pagesDomain of the plugin's core). */
export function pageDomain(deps: { readonly domain: Domain }): Domain {
  return deps.domain
}

/** The signed-in person at this browser, as the domain layer knows them. */
export function pageActor(person: Person, request: FastifyRequest): PersonActor {
  return personActor({ personId: person.id, address: request.ip ?? null })
}

import type { FastifyRequest } from 'fastify'
import { personActor, type PersonActor } from '../../domain/actor.js'
import { DomainFailure } from '../../domain/failure.js'
import { VAULT_OR_ENVIRONMENT, vaultIdOrNull } from '../../domain/vaults.js'
import { signInOf } from '../../hooks/authenticate.js'
import { ApiError, errors, vaultTag } from '../../errors.js'

/** A path id in canonical (lowercase) form, or null when it is not a UUID. */
export const uuidOrNull = vaultIdOrNull

/** How a vault id from the path may appear in a message: its first 8 characters, once it is a UUID. */
export function vaultPhrase(s: string): string {
  const id = uuidOrNull(s)
  return id ? `vault ${vaultTag(id)}` : 'a vault'
}

/** The person behind this request's sign-in, as the domain layer knows them. */
export function actorOf(request: FastifyRequest): PersonActor {
  const s = signInOf(request)
  return personActor({ personId: s.personId, signInId: s.id, clientId: s.clientId, address: request.ip ?? null, label: s.label ?? null })
}

/** A refusal of the domain layer as the API's error record (spec's error table); anything else unchanged. */
export function apiErrorOf(err: unknown): unknown {
  if (!(err instanceof DomainFailure)) return err
  switch (err.kind) {
    case 'not_found':
      return errors.notFound(err.what ?? VAULT_OR_ENVIRONMENT)
    case 'forbidden':
      return errors.forbidden(err.reason)
    case 'invalid':
      return errors.invalidRequest(err.reason)
    case 'storage_limit':
      return errors.storageLimit(err.reason)
    case 'conflict':
      return new ApiError({ status: 409, code: 'conflict', where: 'env API', reason: err.reason })
    default:
      return err // the keys' failures: failure-class.ts
  }
}

/** A path parameter of a request whose route the caller does not know (hooks, phrases); '' when absent. */
export function param(request: FastifyRequest, name: string): string {
  const v = (request.params as Record<string, unknown> | undefined)?.[name]
  return typeof v === 'string' ? v : ''
}

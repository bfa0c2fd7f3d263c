import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Domain } from '../../domain/index.js'
import { vaultTag } from '../../errors.js'
import { readVariablesSchema } from '../../schemas/variables.js'
import { actorOf, param, vaultPhrase } from './context.js'

/**
 * GET /api/env/:vault/:environment: every variable with a value, decrypted,
 * in name order (the domain layer decides who may, logs the read or the
 * refusal, and fails the whole read if one value does not open).
 */
export function variablesRoutes(untyped: FastifyInstance, domain: Domain): void {
  // request and reply types come from the route's TypeBox schema
  const app = untyped.withTypeProvider<TypeBoxTypeProvider>()
  app.get('/:vault/:environment', {
    schema: readVariablesSchema,
    config: {
      envkeepPhrase: (r: FastifyRequest) => `reading an environment of ${vaultPhrase(param(r, 'vault'))}`,
      envkeepResource: (params) => `an environment of ${vaultPhrase(params.vault ?? '')}`,
    },
    handler: async function readEnvironment(request) {
      const r = await domain.readEnvironment(actorOf(request), { vaultId: request.params.vault, environment: request.params.environment }, (vault, env) => {
        request.envkeepOperation = `reading ${env.name} of vault ${vaultTag(vault.id)}`
      })
      return { vault: r.vault.id, environment: r.env.name, variables: r.values }
    },
  })
}

import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Domain } from '../../domain/index.js'
import { vaultTag } from '../../errors.js'
import { readVariablesSchema } from '../../schemas/variables.js'
import { actorOf, vaultPhrase } from './context.js'

type EnvRequest = FastifyRequest<{ Params: { vault: string; environment: string } }>

/**
 * GET /api/env/:vault/:environment: every variable with a value, decrypted,
 * in name order (the domain layer decides who may, logs the read or the
 * refusal, and fails the whole read if one value does not open).
 */
export function variablesRoutes(app: FastifyInstance, domain: Domain): void {
  app.get('/:vault/:environment', {
    schema: readVariablesSchema,
    config: {
      envkeepPhrase: (r: FastifyRequest) => `reading an environment of ${vaultPhrase((r.params as { vault: string }).vault)}`,
      envkeepResource: (params) => `an environment of ${vaultPhrase(params.vault ?? '')}`,
    },
    handler: async function readEnvironment(request: EnvRequest) {
      const r = await domain.readEnvironment(actorOf(request), { vaultId: request.params.vault, environment: request.params.environment }, (vault, env) => {
        request.envkeepOperation = `reading ${env.name} of vault ${vaultTag(vault.id)}`
      })
      return { vault: r.vault.id, environment: r.env.name, variables: r.values }
    },
  })
}

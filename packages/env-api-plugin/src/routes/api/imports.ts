import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Domain } from '../../domain/index.js'
import { requirePushScope } from '../../hooks/authenticate.js'
import { errors, vaultTag } from '../../errors.js'
import { PUSH_BODY_LIMIT, type ResolvedOptions } from '../../options.js'
import { createImportSchema, importStatusSchema } from '../../schemas/imports.js'
import { actorOf, param, uuidOrNull, vaultPhrase } from './context.js'
import { reviewUrl } from '../../review-path.js'

export { pushProblem } from '../../domain/pushes.js'

/**
 * POST /api/env/:vault/:environment/imports (a push, pending until a person
 * decides it) and GET /api/env/imports/:import (its status, for its sender).
 * Who may push, the name and value rules and the plan's limit are the
 * domain layer's; here the body's scope, shape and answer.
 */
export function importsRoutes(untyped: FastifyInstance, opts: ResolvedOptions, domain: Domain): void {
  // request and reply types come from the route's TypeBox schema
  const app = untyped.withTypeProvider<TypeBoxTypeProvider>()
  app.post('/:vault/:environment/imports', {
    schema: createImportSchema,
    bodyLimit: PUSH_BODY_LIMIT,
    config: {
      envkeepPhrase: (r: FastifyRequest) => `sending a push to ${vaultPhrase(param(r, 'vault'))}`,
      envkeepResource: (params) => `the pushes of ${vaultPhrase(params.vault ?? '')}`,
    },
    onRequest: [requirePushScope],
    handler: async function createPush(request, reply) {
      const imp = await domain.createPush(
        actorOf(request),
        { vaultId: request.params.vault, environment: request.params.environment, body: request.body },
        (vault, env) => {
          request.envkeepOperation = `sending a push to ${env.name} of vault ${vaultTag(vault.id)}`
        },
      )
      reply.code(201)
      return {
        import: imp.id,
        status: imp.status,
        vault: imp.vaultId,
        environment: imp.environment,
        names: [...imp.names],
        overwrites: [...imp.overwrites],
        expires_at: imp.expiresAt.toISOString(),
        url: reviewUrl(opts.baseUrl, imp.vaultId, imp.id),
      }
    },
  })

  app.get('/imports/:import', {
    schema: importStatusSchema,
    config: {
      envkeepPhrase: (r: FastifyRequest) => {
        const id = uuidOrNull(param(r, 'import'))
        return id ? `reading the status of push ${id.slice(0, 8)}` : 'reading the status of a push'
      },
      envkeepResource: () => 'the status of a push',
    },
    handler: async function pushStatus(request) {
      const id = uuidOrNull(request.params.import)
      if (!id) throw errors.notFound('the push')
      const imp = await domain.pushStatus(actorOf(request), id)
      request.envkeepOperation = `reading the status of push ${imp.id.slice(0, 8)} of vault ${vaultTag(imp.vaultId)}`
      return {
        import: imp.id,
        status: imp.status,
        environments: [imp.environment],
        names: [...imp.names],
        expires_at: imp.expiresAt.toISOString(),
        decided_at: imp.decidedAt ? imp.decidedAt.toISOString() : null,
      }
    },
  })
}

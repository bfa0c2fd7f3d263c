import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Domain } from '../../domain/index.js'
import { mayAccess } from '../../domain/permissions.js'
import { signInOf } from '../../hooks/authenticate.js'
import { listVaultsSchema } from '../../schemas/vaults.js'

/** GET /api/env/vaults: the vaults of the sign-in's person with the environments their role may read. Not access-logged. */
export function vaultsRoutes(untyped: FastifyInstance, domain: Domain): void {
  // request and reply types come from the route's TypeBox schema
  const app = untyped.withTypeProvider<TypeBoxTypeProvider>()
  app.get('/vaults', {
    schema: listVaultsSchema,
    config: { envkeepPhrase: () => 'listing vaults', envkeepResource: () => 'the vault list' },
    handler: async function listVaults(request) {
      const vaults = await domain.listVaults(signInOf(request).personId)
      return {
        vaults: vaults.map((v) => ({
          id: v.id,
          name: v.name,
          role: v.role,
          environments: v.environments.filter((e) => mayAccess(v, e, 'read')).map((e) => e.name),
        })),
      }
    },
  })
}

import type { FastifyInstance, FastifyRequest } from 'fastify'
import { canReadEnvironment } from '../../access.js'
import { signInOf } from '../../hooks/authenticate.js'
import type { ResolvedOptions } from '../../options.js'
import { listVaultsSchema } from '../../schemas/vaults.js'

/** GET /api/env/vaults: the vaults of the sign-in's person with the environments their role may read. Not access-logged. */
export function vaultsRoutes(app: FastifyInstance, opts: ResolvedOptions): void {
  app.get('/vaults', {
    schema: listVaultsSchema,
    config: { envkeepPhrase: () => 'listing vaults' },
    handler: async function listVaults(request: FastifyRequest) {
      const vaults = await opts.storage.listVaults(signInOf(request).personId)
      return {
        vaults: vaults.map((v) => ({
          id: v.id,
          name: v.name,
          role: v.role,
          environments: v.environments.filter((e) => canReadEnvironment(v.role, e)).map((e) => e.name),
        })),
      }
    },
  })
}

import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { VaultAccess } from '../../adapters/vault-store.js'
import { derivedFromList } from '../../cache/held-lists.js'
import type { Domain } from '../../domain/index.js'
import { mayAccess } from '../../domain/permissions.js'
import { signInOf } from '../../hooks/authenticate.js'
import { listVaultsSchema } from '../../schemas/vaults.js'
import { sendJsonBytes } from './json-bytes.js'

/** GET /api/env/vaults: the vaults of the sign-in's person with the environments their role may read. Not access-logged. */
export function vaultsRoutes(untyped: FastifyInstance, domain: Domain): void {
  // request and reply types come from the route's TypeBox schema
  const app = untyped.withTypeProvider<TypeBoxTypeProvider>()
  /** the answer's bytes for a list, by the route's own serializer (compiled from its 200 schema); one per held list */
  const answerKey = {}
  app.get('/vaults', {
    schema: listVaultsSchema,
    config: { envkeepPhrase: () => 'listing vaults', envkeepResource: () => 'the vault list' },
    handler: async function listVaults(request, reply) {
      const vaults = await domain.listVaults(signInOf(request).personId)
      const r = reply as FastifyReply
      // the same bytes for the same list until a change: serialized once per list the core's cache holds (cache/held-lists.ts)
      const answer = derivedFromList(vaults, answerKey, (list) => {
        const serialize = r.getSerializationFunction('200') as (body: unknown) => string
        return Buffer.from(serialize(listed(list)), 'utf8')
      })
      return sendJsonBytes(r, answer)
    },
  })
}

/** The answer's object: each vault with the environments its role may read. */
function listed(vaults: readonly VaultAccess[]) {
  return {
    vaults: vaults.map((v) => ({
      id: v.id,
      name: v.name,
      role: v.role,
      environments: v.environments.filter((e) => mayAccess(v, e, 'read')).map((e) => e.name),
    })),
  }
}

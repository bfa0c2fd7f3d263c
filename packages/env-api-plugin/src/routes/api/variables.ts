import type { FastifyInstance, FastifyRequest } from 'fastify'
import { canReadEnvironment } from '../../access.js'
import { errors, vaultTag } from '../../errors.js'
import type { ResolvedOptions } from '../../options.js'
import { readVariablesSchema } from '../../schemas/variables.js'
import type { VaultCrypto } from '../../vault-service.js'
import { findEnvironment, logEntry, roleRefusal, vaultPhrase } from './context.js'

type EnvRequest = FastifyRequest<{ Params: { vault: string; environment: string } }>

/**
 * GET /api/env/:vault/:environment: every variable with a value, decrypted,
 * in name order. The read is logged with its names before any value leaves;
 * a refused read is logged as refused; one value that does not open fails
 * the whole read.
 */
export function variablesRoutes(app: FastifyInstance, opts: ResolvedOptions, vaultCrypto: VaultCrypto): void {
  app.get('/:vault/:environment', {
    schema: readVariablesSchema,
    config: {
      envkeepPhrase: (r: FastifyRequest) => `reading an environment of ${vaultPhrase((r.params as { vault: string }).vault)}`,
    },
    handler: async function readEnvironment(request: EnvRequest) {
      const { vault, env } = await findEnvironment(opts, request, request.params.vault, request.params.environment)
      request.envkeepOperation = `reading ${env.name} of vault ${vaultTag(vault.id)}`
      if (!canReadEnvironment(vault.role, env)) {
        await opts.storage.appendAccessLog(logEntry(opts, request, vault.id, 'refused', env.name, []))
        throw errors.forbidden(roleRefusal(vault, env, 'read'))
      }
      if (!opts.keyring) throw errors.notConfigured()
      const { variables } = await opts.storage.readVariables(
        vault.id,
        env.name,
        logEntry(opts, request, vault.id, 'read', env.name, []),
      )
      // storage answers in name order already; sort only if it did not
      const sorted = inNameOrder(variables) ? variables : [...variables].sort(byName)
      // openValues fills its object in the order given (names never look like array indexes)
      const values = await vaultCrypto.openValues(vault.id, env.name, sorted)
      return { vault: vault.id, environment: env.name, variables: values }
    },
  })
}

function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}

function inNameOrder(list: readonly { name: string }[]): boolean {
  for (let i = 1; i < list.length; i++) if ((list[i - 1] as { name: string }).name >= (list[i] as { name: string }).name) return false
  return true
}

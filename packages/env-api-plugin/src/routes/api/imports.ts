import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { canReadEnvironment } from '../../access.js'
import type { RefusedLine, StorageLimit } from '../../adapters/storage.js'
import { requirePushScope, signInOf } from '../../hooks/authenticate.js'
import { errors, vaultTag } from '../../errors.js'
import { PUSH_BODY_LIMIT, type ResolvedOptions } from '../../options.js'
import { createImportSchema, importStatusSchema, MAX_REASON, MAX_REFUSED } from '../../schemas/imports.js'
import { nameProblem, valueProblem, type VaultCrypto } from '../../vault-service.js'
import { findEnvironment, logEntry, roleRefusal, uuidOrNull, vaultPhrase } from './context.js'

interface PushBody {
  variables: Record<string, string>
  refused?: RefusedLine[]
}
type PushRequest = FastifyRequest<{ Params: { vault: string; environment: string }; Body: PushBody }>
type StatusRequest = FastifyRequest<{ Params: { import: string } }>

const NO_LIMIT: StorageLimit = Object.freeze({ maxVariables: Number.MAX_SAFE_INTEGER, maxBytes: Number.MAX_SAFE_INTEGER })

/**
 * Checks the push body against the rules of decisions.md. Reasons name the
 * position of what is wrong, never its content.
 */
export function pushProblem(body: PushBody): string | null {
  const names = Object.keys(body.variables)
  if (names.length === 0) return 'the push holds no variables'
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string
    const np = nameProblem(name)
    if (np) return `variable ${i + 1} of the push has a bad name: ${np}`
    const vp = valueProblem(body.variables[name] as string)
    if (vp) return `variable ${i + 1} of the push has a bad value: ${vp}`
  }
  const refused = body.refused ?? []
  if (refused.length > MAX_REFUSED) return `at most ${MAX_REFUSED} refused entries are accepted`
  for (let i = 0; i < refused.length; i++) {
    const r = refused[i] as RefusedLine
    if (!Number.isSafeInteger(r.line) || r.line < 1) return `refused entry ${i + 1}: line must be an integer of at least 1`
    if (r.name.length > 256) return `refused entry ${i + 1}: name must be at most 256 characters`
    if (r.reason.length < 1 || r.reason.length > MAX_REASON)
      return `refused entry ${i + 1}: reason must be 1 to ${MAX_REASON} characters`
  }
  return null
}

/**
 * POST /api/env/:vault/:environment/imports (a push, pending until a person
 * decides it) and GET /api/env/imports/:import (its status, for its sender).
 */
export function importsRoutes(app: FastifyInstance, opts: ResolvedOptions, vaultCrypto: VaultCrypto): void {
  app.post('/:vault/:environment/imports', {
    schema: createImportSchema,
    bodyLimit: PUSH_BODY_LIMIT,
    config: {
      envkeepPhrase: (r: FastifyRequest) => `sending a push to ${vaultPhrase((r.params as { vault: string }).vault)}`,
    },
    onRequest: [requirePushScope],
    handler: async function createPush(request: PushRequest, reply) {
      const { vault, env } = await findEnvironment(opts, request, request.params.vault, request.params.environment)
      request.envkeepOperation = `sending a push to ${env.name} of vault ${vaultTag(vault.id)}`
      if (!canReadEnvironment(vault.role, env)) throw errors.forbidden(roleRefusal(vault, env, 'push to'))
      if (!opts.keyring) throw errors.notConfigured()
      const problem = pushProblem(request.body)
      if (problem) throw errors.invalidRequest(problem)

      const now = opts.now()
      const names = Object.keys(request.body.variables).sort()
      const sealed = await vaultCrypto.sealValues(vault.id, env.name, request.body.variables)
      const limit = opts.plans[vault.plan] ?? opts.plans['self-hosted'] ?? NO_LIMIT
      const result = await opts.storage.createImport(
        {
          id: randomUUID(),
          vaultId: vault.id,
          environment: env.name,
          senderId: signInOf(request).personId,
          signInId: signInOf(request).id,
          values: sealed,
          refused: (request.body.refused ?? []).map((r) => ({ line: r.line, name: r.name, reason: r.reason })),
          createdAt: now,
          expiresAt: new Date(now.getTime() + opts.importTtlMs),
          limit,
        },
        logEntry(opts, request, vault.id, 'push_created', env.name, names, now),
      )
      if (!result.ok) {
        const what = result.limit === 'variables' ? 'variables' : 'bytes of stored values'
        throw errors.storageLimit(
          `vault ${vaultTag(vault.id)} is at its storage limit of ${result.max} ${what} on plan ${vault.plan}; ` +
            `with this push it would use ${result.usage}`,
        )
      }
      const imp = result.import
      reply.code(201)
      return {
        import: imp.id,
        status: imp.status,
        vault: imp.vaultId,
        environment: imp.environment,
        names: [...imp.names],
        overwrites: [...imp.overwrites],
        expires_at: imp.expiresAt.toISOString(),
        url: `${opts.baseUrl}/v/${imp.vaultId}/variables/imports/${imp.id}`,
      }
    },
  })

  app.get('/imports/:import', {
    schema: importStatusSchema,
    config: {
      envkeepPhrase: (r: FastifyRequest) => {
        const id = uuidOrNull((r.params as { import: string }).import)
        return id ? `reading the status of push ${id.slice(0, 8)}` : 'reading the status of a push'
      },
    },
    handler: async function pushStatus(request: StatusRequest) {
      const id = uuidOrNull(request.params.import)
      const imp = id ? await opts.storage.getImport(id, opts.now()) : null
      // Anyone but the sender gets the same answer as for an unknown push.
      if (!imp || imp.senderId !== signInOf(request).personId) throw errors.notFound('the push')
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

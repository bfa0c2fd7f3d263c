import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { resolveOptions, type EnvApiOptions } from './options.js'
import { apiRoutes } from './routes/api/index.js'
import { oauthRoutes } from './routes/oauth/index.js'
import { pageRoutes } from './pages/index.js'

export type { EnvApiOptions, ResolvedOptions } from './options.js'
export type * from './adapters/storage.js'
export type * from './adapters/keyring.js'
export type * from './adapters/people.js'
export { ApiError, StorageError, SQLSTATE_NAMES } from './errors.js'

/**
 * envkeep's routes: `/api/env/*`, the OAuth 2.1 authorization server with
 * its metadata, and the person-facing pages. Encapsulated: hooks, error
 * handlers and decorators stay inside; nothing is decorated on the host.
 * Paths follow the path of `baseUrl` (register without a prefix).
 */
async function envApi(app: FastifyInstance, options: EnvApiOptions): Promise<void> {
  const opts = resolveOptions(options)
  await app.register(apiRoutes, { opts })
  await app.register(oauthRoutes, { opts })
  await app.register(pageRoutes, { opts })
}

export default fp(envApi, { name: '@envkeep/env-api-plugin', fastify: '5.x', encapsulate: true })
export { envApi }

import type { FastifyInstance } from 'fastify'
import fastifyCookie from '@fastify/cookie'
import fp from 'fastify-plugin'
import { scheduleHousekeeping } from './housekeeping.js'
import { resolveOptions, type EnvApiOptions } from './options.js'
import { apiRoutes } from './routes/api/index.js'
import { oauthRoutes } from './routes/oauth/index.js'
import { pageRoutes } from './pages/index.js'
import { mcpRoutes } from './mcp/endpoint.js'
import { csrfPlugin } from './pages/csrf.js'
import { scheduleWebhookDeliveries } from './webhooks/worker.js'

export type { EnvApiOptions, ResolvedOptions } from './options.js'
export type * from './adapters/storage.js'
export type * from './adapters/keyring.js'
export type * from './adapters/people.js'
export type { ApiOperation, ApiOutcome, EnvApiObserver } from './adapters/observer.js'
export { ApiError, StorageError, SQLSTATE_NAMES } from './errors.js'
export { createLocalKeyring } from './crypto/local-keyring.js'
export { createVaultCrypto, nameProblem, rotateDataKey, valueProblem, type VaultCrypto } from './vault-service.js'
export { canReadEnvironment, canWriteEnvironment, canDecideImport, canManageVault, mayAccess } from './access.js'
export { createEnvkeepCore, type CoreOptions, type CoreSettings, type DomainPeople, type EnvkeepCore } from './core.js'
export { decideImport, type DecideImportInput, type DecideImportOutcome } from './imports-service.js'
export {
  ADMINISTRATOR,
  ADMINISTRATOR_CLIENT,
  createDomain,
  DEFAULT_ENVIRONMENTS,
  DomainFailure,
  defaultPlan,
  environmentNameProblem,
  isRole,
  limitOf,
  personActor,
  pruneHistory,
  vaultTag,
  ROLES,
  vaultNameProblem,
  withFailuresAs,
  isPublicAddress,
  PRIVATE_REFUSAL,
  webhookUrlProblem,
  WEBHOOK_EVENTS,
  type Actor,
  type AdministratorActor,
  type Domain,
  type DomainDeps,
  type FailureKind,
  type PersonActor,
  type SharedCounters,
} from './domain/index.js'

/**
 * envkeep's routes: `/api/env/*`, the OAuth 2.1 authorization server with
 * its metadata, and the person-facing pages. Encapsulated: hooks, error
 * handlers and decorators stay inside; nothing is decorated on the host.
 * Paths follow the path of `baseUrl` (register without a prefix).
 */
async function envApi(app: FastifyInstance, options: EnvApiOptions): Promise<void> {
  const opts = resolveOptions(options)
  // a prefix would silently double the paths (they already follow baseUrl's path): refuse it
  if (app.prefix !== '') {
    throw new TypeError(
      `envkeep: register the plugin without a prefix (got "${app.prefix}"); its paths follow the path of baseUrl, e.g. baseUrl: 'https://example.com${app.prefix}'`,
    )
  }
  app.decorateRequest('envkeepOperation', null)
  // every answer (API, OAuth, metadata, pages, assets, errors, redirects) forbids MIME sniffing
  // (hooks on every request take `done` rather than being async: no promise made per request)
  app.addHook('onSend', function noSniff(_request, reply, payload, done) {
    reply.header('x-content-type-options', 'nosniff')
    done(null, payload)
  })
  // Pages share one cookie parser and CSRF protection (Origin check and a token bound to
  // the people adapter's session). A host that registered them already keeps its own.
  if (!app.hasDecorator('parseCookie')) await app.register(fastifyCookie)
  if (!app.hasDecorator('csrfProtection')) {
    const people = opts.people
    await app.register(csrfPlugin, {
      baseUrl: opts.baseUrl,
      ...(people.sessionBinding ? { binding: (request) => people.sessionBinding?.(request) ?? null } : {}),
    })
  }
  scheduleHousekeeping(app, opts)
  scheduleWebhookDeliveries(app, opts)
  await app.register(apiRoutes, { opts })
  await app.register(oauthRoutes, { opts })
  await app.register(pageRoutes, { opts })
  if (opts.mcp) await app.register(mcpRoutes, { opts })
}

export default fp(envApi, { name: '@envkeep/env-api-plugin', fastify: '5.x', encapsulate: true })
export { envApi }
export { html, PAGE_HEADERS, type SafeHtml } from './pages/html.js'
export { layout } from './pages/layout.js'
export { newRef } from './ref.js'
export { loadOnce, type LoadOnce } from './load-once.js'
export { http as nodeHttp } from './node-http.js'
export { renderErrorPage, sendErrorPage, refusalBox, type ErrorPageInput, type PageFailure } from './pages/error.js'
export { field } from './pages/context.js'
export { logFailure } from './failure-log.js'
export { envkeepFrameworkErrors } from './framework-errors.js'
export { envkeepNotFound } from './not-found.js'
export { safeRedirectPath } from './pages/redirect.js'
export { csrfPlugin, csrfCookieName, type CsrfOptions } from './pages/csrf.js'
export { ciPrincipal } from './adapters/ci-identity-store.js'
export {
  expiredPush,
  memberChangeEntry,
  overwritesOf,
  plannedPush,
  type PlannedPush,
  pushExpiredEntry,
  pushHasExpired,
  sameSecrets,
  storageLimitRefusal,
  type Usage,
} from './domain/storage-rules.js'
export { boundMethods, type BoundMethods } from './adapters/bound-methods.js'
export { changesCachedData, onChanges } from './cache/change-kinds.js'
export { ACCESS_ACTIONS, isAccessAction } from './domain/access-log-actions.js'
export { deliverDueWebhooks, sweepWebhookEvents, MAX_ATTEMPTS, RETRY_DELAYS_MS, type WebhookWorkerDeps } from './webhooks/worker.js'
export { signatureOf, SIGNATURE_TOLERANCE_S, verifyWebhookSignature, type GenericBody } from './webhooks/payload.js'

import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import fastifyCookie from '@fastify/cookie'
import envApi, {
  createEnvkeepCore,
  csrfCookieName,
  csrfPlugin,
  envkeepFrameworkErrors,
  envkeepNotFound,
  type Keyring,
  type Storage,
} from '@envkeep/env-api-plugin'
import type { AccountStore } from './accounts/account-store.js'
import type { ServerConfig } from './config.js'
import { createInvitationHooks } from './invitations.js'
import { createMailer, type Mailer } from './mailer.js'
import { createCookieTossGuard, createLocalPeople, PENDING_COOKIE, sessionCookieName, type LocalPeople } from './people-local.js'
import { accountPages } from './pages/account-pages.js'
import { createOidcClient, type OidcClient } from './oidc/oidc-client.js'
import { oidcPages } from './oidc/oidc-pages.js'
import { accountSettingsPages } from './pages/account-settings-pages.js'
import { createPasskeyKit, passkeyPages } from './pages/passkey-pages.js'
import { secondFactorPages } from './pages/second-factor-pages.js'
import { invitePages } from './pages/invite-pages.js'
import type { Metrics } from './ops/metrics.js'
import { createReadinessProbe, healthRoutes, type ReadinessProbe } from './ops/health.js'

export interface AppDeps {
  readonly config: ServerConfig
  readonly storage: Storage
  readonly accounts: AccountStore
  /** null when the server has no master key: value routes answer 503 not_configured */
  readonly keyring: Keyring | null
  readonly logger: FastifyBaseLogger
  readonly now?: () => Date
  /** sign-in and setup attempts per client address per minute. Default 10. */
  readonly loginAttemptsPerMinute?: number
  /** true once shutdown began: answers then carry `Connection: close`, so kept-alive sockets end */
  readonly isShuttingDown?: () => boolean
  /** sends invitation emails; default: nodemailer over config.smtp when set, else none */
  readonly mailer?: Mailer | null
  /** the OpenID Connect client (tests wait on its discovery); default: made from config.oidc */
  readonly oidcClient?: OidcClient
  /** what /readyz checks; default: the key is loaded and the storage's database answers with its schema unchanged */
  readonly readiness?: ReadinessProbe
  /** counts requests and outcomes (ENVKEEP_METRICS_ADDRESS); the storage given should be `metrics.timeStorage(…)` */
  readonly metrics?: Metrics
}

export interface BuiltApp {
  readonly app: FastifyInstance
  readonly people: LocalPeople
}

/**
 * The whole server as a Fastify app, not listening yet: cookies and CSRF at
 * the root (the plugin reuses them), the server's own /setup, /login and
 * /logout pages, then the envkeep plugin with local accounts as its people.
 */
export async function buildApp(deps: AppDeps): Promise<BuiltApp> {
  const { config } = deps
  const now = deps.now ?? (() => new Date())
  const secureCookies = config.baseUrl.startsWith('https:')
  const app = Fastify({
    loggerInstance: deps.logger,
    // n hops: believe the n addresses nearest to us in X-Forwarded-For, never the client's own
    trustProxy:
      typeof config.trustProxy === 'number'
        ? (
            (hops: number) => (_address: string, hop: number) =>
              hop < hops
          )(config.trustProxy)
        : config.trustProxy === false
          ? false
          : [...config.trustProxy],
    // in-flight requests finish on close; idle keep-alive connections are closed at once
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    // a URL Fastify cannot decode gets the spec's error record, not a 400 quoting the URL
    frameworkErrors: envkeepFrameworkErrors,
  })
  deps.metrics?.instrument(app)
  // every answer of the service (the plugin's, the account pages', not-found and framework errors) forbids MIME sniffing
  app.addHook('onSend', async function noSniff(_request, reply) {
    reply.header('x-content-type-options', 'nosniff')
  })
  const isShuttingDown = deps.isShuttingDown
  if (isShuttingDown) {
    app.addHook('onSend', async function closeWhenShuttingDown(_request, reply, payload) {
      if (isShuttingDown()) reply.header('connection', 'close')
      return payload
    })
  }
  const probe =
    deps.readiness ??
    createReadinessProbe({
      storage: deps.storage,
      keyLoaded: () => deps.keyring !== null,
    })
  await probe() // the schema as this process migrated it: a later change makes /readyz say so
  const readiness: ReadinessProbe = async () => (isShuttingDown?.() ? 'the server is shutting down' : probe())
  await app.register(healthRoutes, { probe: readiness, basePath: config.basePath })
  // one not-found answer for the whole server: a page or the error record, never quoting the query
  app.setNotFoundHandler(envkeepNotFound(config.baseUrl))
  await app.register(fastifyCookie)
  // a session or CSRF cookie sent twice (one planted by a sibling origin over http): signed out, all copies expired
  app.addHook(
    'onRequest',
    createCookieTossGuard({
      names: [sessionCookieName(secureCookies), csrfCookieName(config.baseUrl), secureCookies ? `__Host-${PENDING_COOKIE}` : PENDING_COOKIE],
      basePath: config.basePath,
      secureCookies,
    }),
  )
  const mailer = deps.mailer !== undefined ? deps.mailer : config.smtp ? createMailer(config.smtp) : null
  if (mailer && deps.mailer === undefined) app.addHook('onClose', async () => mailer.close())
  const people: LocalPeople = {
    ...createLocalPeople({ accounts: deps.accounts, basePath: config.basePath, secureCookies, now }),
    ...createInvitationHooks({ accounts: deps.accounts, baseUrl: config.baseUrl, now, mailer, log: app.log }),
  }
  // one core for the plugin and the server's own pages: an invitation's membership goes through
  // the same domain layer (its rules, its log, its caches)
  const core = createEnvkeepCore({
    storage: deps.storage,
    keyring: deps.keyring,
    people,
    now,
    importTtlMs: config.importTtlSeconds * 1000,
    historyDays: config.historyDays,
    plans: { ...config.plans },
    ciAllowHttpLoopbackIssuers: config.ciAllowHttpLoopbackIssuers,
    allowPrivateWebhooks: config.webhookAllowPrivate,
  })
  // CSRF at the root, for the account pages and the plugin's pages alike: tokens bound to the session
  await app.register(csrfPlugin, { baseUrl: config.baseUrl, binding: (request) => people.sessionBinding(request) })
  // sign-in limits in the storage's shared counters when it has them: every process counts alike
  const counters = core.domain.sharedCounters()
  await app.register(accountPages, {
    accounts: deps.accounts,
    attemptCounters: counters,
    people,
    basePath: config.basePath,
    now,
    ...(deps.loginAttemptsPerMinute === undefined ? {} : { attemptsPerMinute: deps.loginAttemptsPerMinute }),
    requireSecondFactor: config.requireSecondFactor,
    ssoName: config.oidc?.name ?? null,
    passwordLogin: config.passwordLogin,
  })
  const attempts = { attemptCounters: counters, ...(deps.loginAttemptsPerMinute === undefined ? {} : { attemptsPerMinute: deps.loginAttemptsPerMinute }) }
  // the second step of a sign-in, and the Account page (issue 22)
  const passkeys = createPasskeyKit({ accounts: deps.accounts, baseUrl: config.baseUrl, basePath: config.basePath, now })
  await app.register(passkeyPages, { accounts: deps.accounts, people, baseUrl: config.baseUrl, basePath: config.basePath, now, ...attempts })
  await app.register(secondFactorPages, {
    accounts: deps.accounts,
    people,
    keyring: deps.keyring,
    basePath: config.basePath,
    now,
    passkeyForm: passkeys.factorForm,
    ...attempts,
  })
  await app.register(accountSettingsPages, {
    accounts: deps.accounts,
    domain: core.domain,
    people,
    keyring: deps.keyring,
    basePath: config.basePath,
    now,
    requireSecondFactor: config.requireSecondFactor,
    sso: config.oidc ? { name: config.oidc.name, issuer: config.oidc.issuer } : null,
    passwordLogin: config.passwordLogin,
    ...attempts,
  })
  // single sign-on (discovery in the background, never blocking start-up) and the break-glass link
  if (
    !config.passwordLogin &&
    config.oidc &&
    !config.oidc.autoCreate &&
    config.oidc.allowedDomains.length === 0 &&
    (await deps.accounts.countIdentities()) === 0
  )
    throw new Error(
      'envkeep-server: ENVKEEP_PASSWORD_LOGIN=false refused: no account can sign in by single sign-on yet (none is linked, and ENVKEEP_OIDC_ALLOWED_DOMAINS lets none be adopted or created)',
    )
  const oidcClient = config.oidc ? (deps.oidcClient ?? createOidcClient(config.oidc, app.log)) : null
  if (oidcClient) app.addHook('onClose', async () => oidcClient.stop())
  await app.register(oidcPages, {
    oidc: config.oidc,
    client: oidcClient,
    accounts: deps.accounts,
    domain: core.domain,
    people,
    baseUrl: config.baseUrl,
    basePath: config.basePath,
    secureCookies,
    now,
  })
  await app.register(invitePages, {
    accounts: deps.accounts,
    attemptCounters: counters,
    people,
    domain: core.domain,
    basePath: config.basePath,
    now,
    ...(deps.loginAttemptsPerMinute === undefined ? {} : { attemptsPerMinute: deps.loginAttemptsPerMinute }),
  })
  await app.register(envApi, {
    baseUrl: config.baseUrl,
    storage: deps.storage,
    keyring: deps.keyring,
    people,
    core,
    now,
    importTtlMs: config.importTtlSeconds * 1000,
    historyDays: config.historyDays,
    rateLimit: { perMinute: config.ratePerMinute, perDay: config.ratePerDay },
    plans: { ...config.plans },
    ciAllowHttpLoopbackIssuers: config.ciAllowHttpLoopbackIssuers,
    allowPrivateWebhooks: config.webhookAllowPrivate,
    mcp: config.mcp ? { allowHttpLoopbackClients: config.mcpAllowHttpLoopbackClients } : false,
    ...(deps.metrics ? { observer: deps.metrics.observer } : {}),
  })
  return { app, people }
}

import { BASE_URL_HELP, type Command } from '../command.js'
import type { SignIn } from '../config-store.js'
import { signInError } from '../errors.js'
import {
  buildAuthorizationRequest,
  discover,
  exchangeCode,
  listenForCallback,
  newState,
  revokeToken,
  SCOPE_PUSH,
  SCOPE_READ,
  type TokenSet,
} from '../oauth.js'

export const login: Command = {
  name: 'login',
  summary: 'sign in to an envkeep server in your browser',
  help: `Usage: envkeep login [--base-url URL] [--push] [--no-browser]

Signs in to an envkeep server: opens the server's consent page in your browser
(the link is always printed too), receives the answer on
http://127.0.0.1:<random port>/callback (else [::1]), and stores the sign-in for
that server in the config directory ($ENVKEEP_CONFIG_DIR, else
$XDG_CONFIG_HOME/envkeep, else ~/.config/envkeep), file mode 0600.

Options:
${BASE_URL_HELP}
  --push           also ask for the right to send .env files (envkeep push);
                   tick "Allow this sign-in to send .env files" on the consent page
  --no-browser     do not open a browser; open the printed link yourself
  -h, --help       show this help

Without a terminal (CI, scripts) login fails at once with exit code 4, unless
--no-browser is given: then it prints the link and waits up to 5 minutes for it.`,
  options: {
    push: { type: 'boolean' },
    'no-browser': { type: 'boolean' },
  },
  positionals: [0, 0],
  async run(ctx, { values }) {
    const baseUrl = await ctx.resolveBaseUrl(values['base-url'] as string | undefined)
    const noBrowser = values['no-browser'] === true
    if (!ctx.deps.isTTY && !noBrowser) {
      throw signInError(
        'login needs a person at a browser, and there is no terminal here',
        `sign in from a terminal, or run: envkeep login --no-browser --base-url ${baseUrl} (and open the link it prints)`,
      )
    }
    const scope = values.push === true ? `${SCOPE_READ} ${SCOPE_PUSH}` : SCOPE_READ
    const oauthDeps = { fetch: ctx.deps.fetch, timeoutMs: ctx.deps.timeoutMs }
    const as = await discover(baseUrl, oauthDeps)

    const state = newState()
    const listener = await listenForCallback(state, ctx.deps.loginTimeoutMs, baseUrl)
    let tokens: TokenSet
    try {
      const request = await buildAuthorizationRequest(as, baseUrl, listener.redirectUri, scope, state)
      ctx.err(`Open this link to sign in to ${baseUrl}:\n\n  ${request.url}\n\n`)
      if (!noBrowser) await ctx.deps.openBrowser(request.url).catch(() => {})
      ctx.err('Waiting for the sign-in in your browser…\n')
      const callbackUrl = await listener.callback
      tokens = await exchangeCode(as, baseUrl, callbackUrl, request, listener.redirectUri, scope, oauthDeps)
    } finally {
      listener.close()
    }

    const record = signInRecord(baseUrl, as, tokens, ctx.deps.now())
    const replaced = await ctx.store.withLock(async (tx) => {
      const file = await tx.read()
      const previous = file.signIns[baseUrl] ?? null
      file.signIns[baseUrl] = record
      file.current = baseUrl
      await tx.write(file)
      return previous
    })
    // The sign-in this one replaces would otherwise stay valid on the server until it expires.
    if (replaced) await revokeToken(replaced, replaced.refreshToken, oauthDeps).catch(() => {})
    const canPush = record.scope.split(' ').includes(SCOPE_PUSH)
    ctx.err(
      `${ctx.paint.green('Signed in')} to ${baseUrl}${canPush ? ' (may send .env files)' : ''}.\n` +
        (values.push === true && !canPush ? `The consent page did not allow sending .env files; envkeep push will be refused.\n` : ''),
    )
    return 0
  },
}

export function signInRecord(
  baseUrl: string,
  as: { issuer: string; token_endpoint?: string; revocation_endpoint?: string },
  tokens: TokenSet,
  now: Date,
): SignIn {
  return {
    baseUrl,
    issuer: as.issuer,
    tokenEndpoint: as.token_endpoint!,
    revocationEndpoint: as.revocation_endpoint ?? null,
    clientId: `${baseUrl}/cli/oauth-client.json`,
    resource: `${baseUrl}/api/env`,
    scope: tokens.scope,
    accessToken: tokens.accessToken,
    refreshToken: tokens.refreshToken,
    accessExpiresAt: now.getTime() + tokens.expiresIn * 1000,
    signedInAt: now.toISOString(),
  }
}

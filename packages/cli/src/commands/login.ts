import { BASE_URL_HELP, type Command } from '../command.js'
import type { SignIn } from '../config-store.js'
import { CI_TOKEN_HINT, ciTokenSource } from '../ci-sign-in.js'
import { clean, CliError, signInError, usageError } from '../errors.js'
import { EXIT } from '../exit-codes.js'
import { buildAuthorizationRequest, discover, exchangeCode, listenForCallback, newState, revokeToken, SCOPE_PUSH, SCOPE_READ, type TokenSet } from '../oauth.js'

export const login: Command = {
  name: 'login',
  summary: 'sign in to an envkeep server in your browser',
  help: `Usage: envkeep login [--base-url URL] [--push] [--no-browser] [--ci [--vault VAULT]]

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
  --ci             in CI: exchange this run's identity token (ENVKEEP_OIDC_TOKEN, or
                   GitHub Actions' id-token) and print who it signs in as; nothing is
                   stored (pull, run and vaults do the same by themselves in CI)
  --vault VAULT    with --ci: the vault (id or name) whose CI identity to use, when
                   identities of several vaults match this run
  -h, --help       show this help

Without a terminal (CI, scripts) login fails at once with exit code 4, unless
--no-browser is given: then it prints the link and waits up to 5 minutes for it.`,
  options: {
    push: { type: 'boolean' },
    'no-browser': { type: 'boolean' },
    ci: { type: 'boolean' },
    vault: { type: 'string' },
  },
  positionals: [0, 0],
  async run(ctx, { values }) {
    const baseUrl = await ctx.resolveBaseUrl(values['base-url'] as string | undefined)
    if (values.ci === true) return loginCi(ctx, baseUrl, values.vault as string | undefined)
    if (values.vault !== undefined) throw usageError('--vault goes with --ci')
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
      `${ctx.paint.green('Signed in')} to ${baseUrl}${record.person ? ` as ${personLabel(record.person)}` : ''}${canPush ? ' (may send .env files)' : ''}.\n` +
        (values.push === true && !canPush ? `The consent page did not allow sending .env files; envkeep push will be refused.\n` : ''),
    )
    return 0
  },
}

/** `login --ci`: the exchange, then the vault list it reaches, printed; the token stays in memory. */
async function loginCi(ctx: Parameters<Command['run']>[0], baseUrl: string, vault: string | undefined): Promise<number> {
  if (!ciTokenSource(ctx.deps.env, baseUrl)) {
    throw new CliError('no CI identity token here: neither ENVKEEP_OIDC_TOKEN nor ACTIONS_ID_TOKEN_REQUEST_URL/ACTIONS_ID_TOKEN_REQUEST_TOKEN is set', {
      exitCode: EXIT.needsSignIn,
      hint: CI_TOKEN_HINT,
    })
  }
  if ((await ctx.store.read()).signIns[baseUrl]) {
    throw new CliError(`a person's sign-in to ${baseUrl} is stored here; envkeep uses it rather than the CI identity`, {
      hint: `run envkeep logout --base-url ${baseUrl} first, or set ENVKEEP_CONFIG_DIR to an empty folder`,
    })
  }
  const { vaults } = await ctx
    .api(baseUrl, vault === undefined ? {} : { ciVault: vault })
    .request<{ vaults: { id: string; name: string; role: string; environments: string[] }[] }>('/api/env/vaults', {
      what: `could not sign in to ${baseUrl} as this CI run`,
    })
  const who = await ctx.ciIdentity(baseUrl)
  const reach = vaults.map((v) => `${clean(v.name, 100)} (${clean(v.role, 20)}: ${v.environments.map((e) => clean(e, 64)).join(', ') || 'no environment'})`)
  const identity = who ? `CI identity "${clean(who.name, 100)}"${vaultName(vaults, who.vaultId)}, reaching ` : 'a CI identity of '
  ctx.err(`${ctx.paint.green('Signed in')} to ${baseUrl} as ${identity}${reach.join('; ') || 'no vault'}. Nothing was stored.\n`)
  return 0
}

function vaultName(vaults: readonly { id?: string; name: string }[], id: string): string {
  const v = vaults.find((x) => x.id === id)
  return v ? ` of vault ${clean(v.name, 100)}` : ''
}

/** A person as the server named them, made safe for a terminal: \`Ana <ana@example.com>\`. */
export function personLabel(p: { readonly email: string; readonly name: string }): string {
  const name = clean(p.name, 100)
  const email = clean(p.email, 200)
  return name && name !== email ? `${name} <${email}>` : email
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
    ...(tokens.person ? { person: tokens.person } : {}),
  }
}

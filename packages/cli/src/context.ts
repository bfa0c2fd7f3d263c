import { boundedFetch } from './untrusted.js'
import { homedir } from 'node:os'
import type { Readable, Writable } from 'node:stream'
import { createApiClient, type ApiClient } from './api-client.js'
import { createConfigStore, resolveConfigDir, type ConfigStore } from './config-store.js'
import { createPaint, signInError, type Paint } from './errors.js'
import { ciRefusal, ciTokenSource, inCi, exchangeCiIdentity, type CiAccess } from './ci-sign-in.js'
import { normalizeBaseUrl } from './oauth.js'

/** Everything the CLI touches in the outside world, injected so tests can replace it. */
export interface CliDeps {
  readonly env: Readonly<Record<string, string | undefined>>
  readonly stdin: Readable
  readonly stdout: Writable
  readonly stderr: Writable
  readonly fetch: typeof fetch
  readonly now: () => Date
  readonly sleep: (ms: number) => Promise<void>
  /** Opens a URL in the person's browser; failures are ignored (the link is always printed). */
  readonly openBrowser: (url: string) => Promise<void>
  /** Whether a person is at a terminal (stdin and stderr are TTYs). */
  readonly isTTY: boolean
  /** Current directory, for relative paths. */
  readonly cwd: string
  readonly homedir: string
  /** Per-request timeout. */
  readonly timeoutMs: number
  /** How long `login` waits for the browser. */
  readonly loginTimeoutMs: number
  /** Polling interval of `--wait`. */
  readonly pollIntervalMs: number
  /** Ends this process with a signal (run: a command killed by a signal passes it on). */
  readonly raiseSignal: (signal: NodeJS.Signals) => void
}

export interface Context {
  readonly deps: CliDeps
  readonly paint: Paint
  out(text: string): void
  err(text: string): void
  readonly store: ConfigStore
  /** The server to talk to: --base-url, else ENVKEEP_BASE_URL, else the last login's. */
  resolveBaseUrl(flag: string | undefined): Promise<string>
  /**
   * The API client for a server. `ciVault`: the vault (id or name) a CI run is about to read;
   * a CI sign-in names it in its exchange, so no other vault's CI identity can get in the way.
   */
  api(baseUrl: string, o?: { readonly ciVault?: string }): ApiClient
  /** The CI identity this run signed in to `baseUrl` as (after a request made with it), or null. */
  ciIdentity(baseUrl: string): Promise<CiAccess['identity']>
}

export function createContext(given: CliDeps): Context {
  // every answer from any server is read through a size bound (untrusted.ts)
  const deps: CliDeps = { ...given, fetch: boundedFetch(given.fetch) }
  const color = !deps.env.NO_COLOR && Boolean((deps.stderr as { isTTY?: boolean }).isTTY) && deps.env.TERM !== 'dumb'
  const paint = createPaint(color)
  const store = createConfigStore(resolveConfigDir(deps.env, deps.homedir || homedir()))
  const allowHttp = deps.env.ENVKEEP_ALLOW_HTTP === '1'

  /**
   * Servers the person named: --base-url, ENVKEEP_BASE_URL, the sign-ins file's last login. A
   * server only a folder's `.envkeep.json` names (a file of the repository, anyone's to edit)
   * never receives this CI run's identity token.
   */
  const named = new Set<string>()

  async function resolveBaseUrl(flag: string | undefined): Promise<string> {
    const given = flag ?? (deps.env.ENVKEEP_BASE_URL || undefined)
    if (given !== undefined) {
      const url = normalizeBaseUrl(given, allowHttp)
      named.add(url)
      return url
    }
    const current = (await store.read()).current
    if (current) {
      named.add(current)
      return current
    }
    throw signInError('no envkeep server is set', 'sign in first: envkeep login --base-url https://your-envkeep-server (or set ENVKEEP_BASE_URL)')
  }

  /** This CI run's access token per server (and vault named), exchanged once and kept in memory only. */
  const ciTokens = new Map<string, Promise<CiAccess>>()
  const ciKey = (baseUrl: string, vault: string | undefined) => `${baseUrl}\n${vault ?? ''}`
  function ciAccessToken(baseUrl: string, vault: string | undefined): (() => Promise<string>) | null {
    const source = ciTokenSource(deps.env, baseUrl)
    if (!source) return null
    const refusal = ciRefusal(baseUrl, named.has(baseUrl))
    if (refusal) return () => Promise.reject(refusal)
    const key = ciKey(baseUrl, vault)
    return () => {
      let p = ciTokens.get(key)
      if (!p) {
        p = exchangeCiIdentity(baseUrl, source, deps.env, deps, vault)
        ciTokens.set(key, p)
        p.catch(() => ciTokens.delete(key))
      }
      return p.then((a) => a.accessToken)
    }
  }

  return {
    deps,
    paint,
    out: (t) => void deps.stdout.write(t),
    err: (t) => void deps.stderr.write(t),
    store,
    resolveBaseUrl,
    // the exchange that named no vault (login --ci), else the first one that named one
    ciIdentity: async (baseUrl) => {
      const p = ciTokens.get(ciKey(baseUrl, undefined)) ?? [...ciTokens].find(([k]) => k.startsWith(`${baseUrl}\n`))?.[1]
      return (await p?.catch(() => null))?.identity ?? null
    },
    api: (baseUrl, o) =>
      createApiClient(baseUrl, store, {
        fetch: deps.fetch,
        timeoutMs: deps.timeoutMs,
        now: deps.now,
        sleep: deps.sleep,
        notice: (line) => void deps.stderr.write(`${paint.yellow('note:')} ${line}\n`),
        ciAccessToken: ciAccessToken(baseUrl, o?.ciVault),
        fromLink: !named.has(baseUrl),
        inCi: inCi(deps.env),
      }),
  }
}

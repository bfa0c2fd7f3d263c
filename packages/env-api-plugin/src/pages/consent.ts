import { html, PAGE_HEADERS } from './html.js'
import { renderErrorPage } from './error.js'
import { layout } from './layout.js'

/**
 * The consent page's headers: PAGE_HEADERS, but `form-action` also allows the
 * loopback callback of this request, because Chrome applies form-action to
 * the redirect that follows the form's POST (Allow/Deny → 303 →
 * http://127.0.0.1:<port>/callback). CSP host sources cannot name an IPv6
 * literal (Chromium drops `http://[::1]:*` as an invalid source, and the
 * redirect is then blocked), so for a `[::1]` callback the page allows
 * `http:` targets: still no https elsewhere, no `javascript:` or `data:`,
 * and the page has no script and escapes all it shows.
 */
export function consentHeaders(redirectHost: string, port: number): Record<string, string> {
  const csp = PAGE_HEADERS['content-security-policy'] ?? ''
  const target = redirectHost === '127.0.0.1' ? `http://127.0.0.1:${port}` : 'http:'
  const widened = csp.replace("form-action 'self'", `form-action 'self' ${target}`)
  if (widened === csp) throw new Error('envkeep: PAGE_HEADERS has no form-action to widen')
  return { ...PAGE_HEADERS, 'content-security-policy': widened }
}

export interface ConsentPageInput {
  readonly serviceName: string
  /** `client_name` of the client metadata document */
  readonly clientName: string
  /** host of the client id URL (the service itself for the CLI) */
  readonly clientHost: string
  /** `127.0.0.1:53682` or `[::1]:53682` */
  readonly redirectHost: string
  /** the checkbox "Allow this sign-in to send .env files" is shown, ticked, only when env:push was asked for */
  readonly pushRequested: boolean
  readonly personName: string
  readonly personEmail: string
  readonly csrfToken: string
  /** where the form posts: `{basePath}/oauth/authorize` */
  readonly action: string
  /** the authorization request, carried unchanged to the POST, which checks it all again */
  readonly hidden: Readonly<Record<string, string>>
  readonly basePath: string
  /** the people adapter's sign-out link, as the other pages' top bar has it */
  readonly signOutHref?: string | null
}

/** The consent page: who asks, for which service, where the answer goes; Allow or Deny. */
export function renderConsentPage(v: ConsentPageInput): string {
  const hidden = Object.entries(v.hidden).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`)
  const body = html`<section class="consent">
<h1>Sign in to ${v.serviceName} from the command line?</h1>
<p><strong>${v.clientName}</strong> (from ${v.clientHost}) asks to read the environment variables that ${v.personName} (${v.personEmail}) can read in ${v.serviceName}.</p>
<p class="warning">After you answer, your browser goes to <code>${v.redirectHost}</code>: a program running on this computer. Allow only if you just started <code>envkeep login</code> yourself.</p>
<form method="post" action="${v.action}">
<input type="hidden" name="_csrf" value="${v.csrfToken}">
${hidden}${
  v.pushRequested
    ? html`<p><label class="check"><input type="checkbox" name="allow_push" value="yes" checked> Allow this sign-in to send .env files</label></p>
<p class="hint">Files it sends wait for a person with write access to review and apply them.</p>
`
    : ''
}<p class="actions buttons"><button type="submit" name="decision" value="allow" class="primary">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button></p>
</form>
</section>`
  // the shared top bar, as on every page of a signed-in person (the sign-out link too)
  return layout({ title: 'Sign in from the command line', body, personName: v.personName, basePath: v.basePath, signOutHref: v.signOutHref ?? null })
}

export interface AuthorizeErrorPageInput {
  readonly status: number
  /** why, in words; never what the client sent */
  readonly why: string
  readonly ref: string
  readonly basePath: string
  readonly serviceName: string
}

/**
 * The page for an authorization request that cannot be answered by redirect
 * (unknown client, bad redirect URI, failed form check): the plugin's error
 * page with its four fields, and no Location.
 */
export function renderAuthorizeErrorPage(v: AuthorizeErrorPageInput): string {
  return renderErrorPage({
    status: v.status,
    what: `signing in to ${v.serviceName} from the command line`,
    where: 'OAuth',
    why: v.why,
    ref: v.ref,
    basePath: v.basePath,
  })
}

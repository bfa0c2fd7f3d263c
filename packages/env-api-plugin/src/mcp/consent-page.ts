import { PAGE_HEADERS, html } from '../pages/html.js'
import { layout } from '../pages/layout.js'
import { formActionSource } from './redirect.js'

/** PAGE_HEADERS with `form-action` widened to the redirect's origin or scheme (Chrome applies it to the redirect after the POST). */
export function mcpConsentHeaders(redirectUri: string): Record<string, string> {
  const csp = PAGE_HEADERS['content-security-policy'] ?? ''
  const widened = csp.replace("form-action 'self'", `form-action 'self' ${formActionSource(redirectUri)}`)
  if (widened === csp) throw new Error('envkeep: PAGE_HEADERS has no form-action to widen')
  return { ...PAGE_HEADERS, 'content-security-policy': widened }
}

export interface McpConsentInput {
  readonly serviceName: string
  readonly clientName: string
  /** where the client is known from: the document's host, or "registered itself" */
  readonly clientOrigin: string
  /** where the browser goes after the answer */
  readonly redirectTarget: string
  /** the client is known only by a redirect to this computer: its name is its own word */
  readonly localhostOnly: boolean
  readonly proposeRequested: boolean
  readonly personName: string
  readonly personEmail: string
  readonly csrfToken: string
  readonly action: string
  readonly hidden: Readonly<Record<string, string>>
  readonly basePath: string
}

/** The consent page of an MCP client: who asks, what it will and will never see, "Propose changes" separately. */
export function renderMcpConsentPage(v: McpConsentInput): string {
  const hidden = Object.entries(v.hidden).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`)
  const body = html`<section class="consent">
<h1>Connect an AI assistant to ${v.serviceName}?</h1>
<p><strong>${v.clientName}</strong> (${v.clientOrigin}) asks to connect to ${v.serviceName} as ${v.personName} (${v.personEmail}) through its MCP endpoint.</p>
<p><strong>It will see names, never values:</strong> your vaults, their environments, the names of variables, who changed them and when. It never sees a value, not masked, not its length.</p>
${
  v.localhostOnly
    ? html`<p class="warning">This client is known only by a redirect to this computer (<code>${v.redirectTarget}</code>): the name above is what it says about itself. Allow only if you just connected it yourself.</p>\n`
    : html`<p class="hint">After you answer, your browser goes to <code>${v.redirectTarget}</code>.</p>\n`
}<form method="post" action="${v.action}">
<input type="hidden" name="_csrf" value="${v.csrfToken}">
${hidden}${
  v.proposeRequested
    ? html`<p><label class="check"><input type="checkbox" name="allow_propose" value="yes"> Also let it propose changes</label></p>
<p class="hint">A proposed change is a push: it waits for a person with write access to review and apply it. The values it proposes are never shown back to it.</p>
`
    : ''
}<p class="actions buttons"><button type="submit" name="decision" value="allow" class="primary">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button></p>
</form>
</section>`
  return layout({ title: 'Connect an AI assistant', body, personName: v.personName, basePath: v.basePath })
}

import { MAX_REFUSED, parseDotenv, type RefusedLine } from '@envkeep/dotenv'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Person } from '../adapters/people.js'
import type { VaultAccess } from '../adapters/vault-store.js'
import { mayAccess } from '../domain/permissions.js'
import { environmentNameProblem } from '../domain/rules.js'
import { vaultTag } from '../errors.js'
import { csrfField, field, pagePath, personOrSignIn, seeOther, sendPage, type PageDeps, topBar } from './context.js'
import { pageActor, pageDomain } from './domain.js'
import { pageError, refusalBox, sendErrorPage, toPageFailure, type PageFailure } from './error.js'
import { html, type SafeHtml } from './html.js'
import { vaultUrl } from './vault.js'
import { reviewPath } from '../review-path.js'

/**
 * "Paste a .env" (issue 14, item 3): the text of a .env file, read with the
 * CLI's own grammar (@envkeep/dotenv), becomes a pending push for review,
 * exactly as `envkeep push` would send it.
 *   GET  /v/:vault/paste[?environment=]   the form: environment, the file's text
 *   POST /v/:vault/paste                  parses; creates the push (the domain layer's
 *                                         createPush, this person as sender); 303 to its review page
 * A refusal (empty file, nothing that can be sent, too large, no right, the plan's limit)
 * renders this page again with the text kept and the refused lines listed by line,
 * name and reason, never a value.
 */

/** The most a pasted file may hold (UTF-8), as much as `envkeep push` sends at once. */
export const MAX_PASTE_BYTES = 1_048_576

/** Room for the text percent-encoded (at most three characters a byte) and the other fields. */
const PASTE_BODY_LIMIT = 3 * MAX_PASTE_BYTES + 16 * 1024

export function pastePath(vaultId: string): string {
  return `/v/${encodeURIComponent(vaultId)}/paste`
}

interface FormState {
  readonly environment?: string
  readonly text?: string
  readonly problem?: PageFailure
  readonly refused?: readonly RefusedLine[]
}

function refusedTable(refused: readonly RefusedLine[]): SafeHtml {
  const rows = refused.map(
    (r) => html`<tr>
<td data-label="Line">${r.line}</td>
<td data-label="Name">${r.name ? html`<code class="name">${r.name}</code>` : html`<span class="muted">(no name)</span>`}</td>
<td data-label="Reason">${r.reason}</td>
</tr>`,
  )
  return html`<section aria-labelledby="refused-title">
<h2 id="refused-title">Refused lines (${refused.length})</h2>
<p class="hint">These lines would not be sent. A push lists them for its reviewer.</p>
<table class="stack refused"><thead><tr><th>Line</th><th>Name</th><th>Reason</th></tr></thead><tbody>${rows}</tbody></table>
</section>`
}

export function pasteRoutes(app: FastifyInstance, deps: PageDeps): void {
  const domain = pageDomain(deps)

  function render(reply: FastifyReply, person: Person, vault: VaultAccess, o: FormState = {}): Promise<FastifyReply> {
    const token = reply.generateCsrf()
    const allowed = vault.environments.filter((e) => mayAccess(vault, e, 'write'))
    const chosen = allowed.find((e) => e.name === o.environment)?.name ?? allowed.find((e) => !e.ownersOnly)?.name ?? allowed[0]?.name
    const options = allowed.map(
      (e) => html`<option value="${e.name}"${e.name === chosen ? html` selected` : ''}>${e.name}${e.ownersOnly ? ' (owners only)' : ''}</option>`,
    )
    const body = html`${o.problem ? refusalBox(o.problem) : ''}
<p class="crumbs"><a href="${pagePath(deps, '/')}">Your vaults</a> › <a href="${vaultUrl(deps, vault.id)}">${vault.name}</a></p>
<h1>Paste a .env</h1>
<p class="hint">The file is read as <code>envkeep push</code> reads it (the rules of the dotenv package: comments, <code>export</code>, quotes, multi-line quoted values). Nothing is written yet: its variables become a push that a person with write access reviews and applies. Variables not in the file stay as they are.</p>
${
  allowed.length === 0
    ? html`<p class="notice" role="status">Your role (${vault.role}) cannot push to any environment of this vault.</p>${
        o.text
          ? html`<label for="paste-text">Contents of the .env file (not sent)</label>
<textarea id="paste-text" rows="14" readonly spellcheck="false">
${o.text}</textarea>`
          : ''
      }`
    : html`<form method="post" action="${pagePath(deps, pastePath(vault.id))}" class="paste card">
${csrfField(token)}
<label for="paste-environment">Environment</label>
<select id="paste-environment" name="environment">${options}</select>
<label for="paste-text">Contents of the .env file</label>
<textarea id="paste-text" name="text" rows="14" spellcheck="false" autocomplete="off" autocapitalize="off" required aria-describedby="paste-text-hint">
${o.text ?? ''}</textarea>
<p id="paste-text-hint" class="hint">At most ${MAX_PASTE_BYTES / 1_048_576} MiB. Lines that cannot be sent are listed with the reason, never their value.</p>
<button type="submit" class="primary">Review as a push</button>
</form>`
}
${o.refused && o.refused.length > 0 ? refusedTable(o.refused) : ''}`
    return sendPage(deps, reply, { status: o.problem?.status ?? 200, title: `Paste a .env into ${vault.name}`, body, person })
  }

  app.get<{ Params: { vault: string } }>('/v/:vault/paste', async function pastePage(request, reply) {
    const person = await personOrSignIn(deps, request, reply)
    if (!person) return reply
    request.envkeepOperation = `showing the paste page of vault ${vaultTag(request.params.vault)}`
    const vault = await domain.locateVault(pageActor(person, request), request.params.vault)
    return render(reply, person, vault, { environment: field(request.query, 'environment') })
  })

  app.post<{ Params: { vault: string } }>(
    '/v/:vault/paste',
    { preHandler: app.csrfProtection, bodyLimit: PASTE_BODY_LIMIT },
    async function pasteForm(request: FastifyRequest<{ Params: { vault: string } }>, reply) {
      const person = await personOrSignIn(deps, request, reply, pagePath(deps, pastePath(request.params.vault)))
      if (!person) return reply
      const environment = field(request.body, 'environment')
      // a browser sends a textarea's line ends as CRLF; the file had LF (or is read as if it had)
      const text = field(request.body, 'text').replace(/\r\n?/g, '\n')
      // the operation names the environment only when it is a name (it goes to the log)
      request.envkeepOperation = `pasting a .env into ${environmentNameProblem(environment) === null ? environment : 'an environment'} of vault ${vaultTag(request.params.vault)}`
      const actor = pageActor(person, request)
      let refused: RefusedLine[] = []
      try {
        if (text.trim() === '') throw pageError(400, 'web app', 'the file is empty: paste the text of a .env file')
        const size = Buffer.byteLength(text, 'utf8')
        if (size > MAX_PASTE_BYTES) {
          throw pageError(
            413,
            'web app',
            `the file is ${size.toLocaleString('en-US')} bytes; at most ${MAX_PASTE_BYTES.toLocaleString('en-US')} are taken at once`,
          )
        }
        if (environment === '') throw pageError(400, 'web app', 'choose an environment')
        const parsed = parseDotenv(text)
        refused = parsed.refused
        if (Object.keys(parsed.variables).length === 0) {
          throw pageError(400, 'web app', `no line of the file can be sent (${refused.length} refused, listed below)`)
        }
        const push = await domain.createPush(actor, {
          vaultId: request.params.vault,
          environment,
          // as `envkeep push`: the reviewer sees the first MAX_REFUSED refusals
          body: { variables: parsed.variables, refused: refused.slice(0, MAX_REFUSED) },
        })
        return seeOther(deps, reply, reviewPath(push.vaultId, push.id))
      } catch (err) {
        const f = toPageFailure(err, request)
        const vault = f.status < 500 ? await domain.locateVault(actor, request.params.vault).catch(() => null) : null
        if (!vault) return sendErrorPage(reply, { ...f, ...(await topBar(deps, reply, person)) })
        return render(reply, person, vault, { environment, text, problem: f, refused })
      }
    },
  )
}

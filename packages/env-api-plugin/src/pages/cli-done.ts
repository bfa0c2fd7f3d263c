import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Person } from '../adapters/people.js'
import { pagePath, sendPage, type PageDeps } from './context.js'
import { html } from './html.js'

/**
 * Where the CLI's loopback listener sends the browser once it has the
 * consent answer (303 from http://127.0.0.1:<port>/callback), so the tab
 * ends on a page of the service instead of a bare one from the terminal.
 * Their URLs carry nothing: the code and state stay with the listener. They
 * need no sign-in (the person may have signed out meanwhile); the top bar
 * shows the person when known.
 */
export function cliDoneRoutes(app: FastifyInstance, deps: PageDeps): void {
  async function who(request: FastifyRequest): Promise<Person | null> {
    try {
      return await deps.opts.people.currentPerson(request)
    } catch {
      return null
    }
  }

  app.get('/cli/signed-in', async function cliSignedIn(request, reply) {
    const body = html`<section class="card done done-ok">
<h1>The command line is signed in</h1>
<p>${deps.opts.serviceName} sent the sign-in back to <code>envkeep</code> on this computer. The terminal says when it is ready.</p>
<p><strong>You can close this tab</strong> and return to the terminal.</p>
<p class="hint">To end this sign-in later, revoke it on <a href="${pagePath(deps, '/sign-ins')}">Sign-ins</a>.</p>
</section>`
    return sendPage(deps, reply, { title: 'Signed in', body, person: await who(request) })
  })

  app.get('/cli/denied', async function cliDenied(request, reply) {
    const body = html`<section class="card done done-denied">
<h1>The sign-in was denied</h1>
<p>You chose Deny: <code>envkeep</code> on this computer got no access to ${deps.opts.serviceName}.</p>
<p><strong>You can close this tab.</strong> To try again, run <code>envkeep login</code> in the terminal.</p>
</section>`
    return sendPage(deps, reply, { title: 'Sign-in denied', body, person: await who(request) })
  })
}

import type { FastifyInstance } from 'fastify'
import { useStrictForms } from './form-body.js'
import type { ResolvedOptions } from '../options.js'
import { ASSETS } from './assets.js'
import { topBar, type PageDeps } from './context.js'
import type { Person } from '../adapters/people.js'
import { pagesDomain } from './domain.js'
import { sendErrorPage, toPageFailure } from './error.js'
import { ciAccessRoutes } from './ci-access.js'
import { historyRoutes } from './history.js'
import { pasteRoutes } from './paste.js'
import { settingsRoutes } from './settings.js'
import { reviewRoutes } from './review.js'
import { signInRoutes } from './sign-ins.js'
import { cliDoneRoutes } from './cli-done.js'
import { vaultRoutes } from './vault.js'
import { vaultListRoutes } from './vaults.js'
import { webhookRoutes } from './webhooks.js'

export { renderErrorPage, sendErrorPage, refusalBox, toPageFailure, type ErrorPageInput, type PageFailure } from './error.js'

/** Largest form body the pages accept (a value is at most 64 KiB; room for the rest). */
const FORM_BODY_LIMIT = 256 * 1024

/**
 * The person-facing pages (vault list, vault, push review, sign-ins) and
 * their assets. Encapsulated: their error handler and form parser stay here.
 * The consent page is registered by the OAuth routes.
 *
 * Routes, under the path of baseUrl (GET pages; POST forms, each behind CSRF):
 *   GET  /                                   the person's vaults; POST /vaults creates one
 *   GET  /v/:vault                           environments, variables, pushes, members, access log
 *        (?environment=&action=&before= filter the log)
 *   POST /v/:vault/reveal                    environment [+ name]: shows values, logs `read`
 *   POST /v/:vault/variables/{add,change,delete}
 *   POST /v/:vault/members/{invite,add,change,remove}, /v/:vault/environments   (owners)
 *   POST /v/:vault/members/invitations/revoke   (owners; with the people adapter's hooks)
 *   GET  /v/:vault/variables/imports/:import  the review page; POST …/reveal, …/apply, …/reject
 *   GET  /v/:vault/paste                     "Paste a .env"; POST creates a push from it (paste.ts)
 *   GET  /sign-ins; POST /sign-ins/revoke
 *   GET  /v/:vault/ci                        CI access (owners); POST /v/:vault/ci/{add,remove}
 *   GET  /v/:vault/webhooks                  webhooks (owners); POST /v/:vault/webhooks/{add,remove}
 *   GET  /cli/signed-in, /cli/denied      where the CLI's loopback page sends the browser
 *   GET  /assets/envkeep.css, /assets/envkeep.js
 *
 * Decisions where the spec is silent:
 * - every member sees the vault page, the names of every environment, the
 *   pending pushes and the access log (names only, never values); values and
 *   value forms only where the role may read (access.ts);
 * - "Add variable" refuses a name that exists (409: use "Change"), so a typo
 *   never overwrites a value silently;
 * - a revealed value is rendered into the answer of the POST, never put in a
 *   URL; successful forms answer 303 to the page (post/redirect/get);
 * - a refused form re-renders its page with the refusal on top (status of the
 *   refusal); a failure of the server itself is a whole error page;
 * - the review page is visible to every member; Reveal needs read access,
 *   Apply/Reject need canDecideImport; revealing an overwrite also shows the
 *   value it would replace (one `read` entry with the push's names);
 * - member changes and new environments are logged (member_*, environment_created);
 * - a vault keeps at least one owner: the last owner cannot be demoted or removed;
 * - the vault list shows, per vault, the pending pushes waiting for the person (ones they may
 *   apply or reject, not past their expiry) and the top bar of every page the total, linking to
 *   the vault list; one `listImports` per vault where the person decides anything, for at most
 *   WAITING_VAULTS (50) vaults and WAITING_PER_VAULT (100) pushes each, past which it says "50+";
 * - "Invite" adds someone who has an account at once; for anyone else it asks the people
 *   adapter's optional `invite` hook and shows the link in that answer only (a POST, never
 *   a redirect with the link in a URL); pending invitations are shown to owners only.
 */
export async function pageRoutes(parent: FastifyInstance, o: { opts: ResolvedOptions }): Promise<void> {
  const { opts } = o
  await parent.register(
    async function envkeepPages(app) {
      useStrictForms(app, FORM_BODY_LIMIT)
      const deps: PageDeps = { opts, domain: pagesDomain(opts.core.domain) }

      app.setErrorHandler(async function pageErrorHandler(err, request, reply) {
        const f = toPageFailure(err, request)
        let person: Person | null = null
        try {
          person = await opts.people.currentPerson(request)
        } catch {
          person = null
        }
        // the shared top bar, as on every other page (sign-out link, pushes waiting)
        return sendErrorPage(reply, { ...f, ...(person ? await topBar(deps, reply, person) : { personName: null, basePath: opts.basePath }) })
      })

      app.get<{ Params: { file: string } }>('/assets/:file', async function pageAsset(request, reply) {
        const asset = Object.hasOwn(ASSETS, request.params.file) ? ASSETS[request.params.file] : undefined
        if (!asset) return reply.callNotFound() // the host's one not-found answer
        reply.header('etag', asset.etag).header('cache-control', 'public, max-age=3600').header('x-content-type-options', 'nosniff')
        if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send()
        return reply.type(asset.type).send(asset.body)
      })

      vaultListRoutes(app, deps)
      vaultRoutes(app, deps)
      reviewRoutes(app, deps)
      pasteRoutes(app, deps)
      historyRoutes(app, deps)
      settingsRoutes(app, deps)
      signInRoutes(app, deps)
      ciAccessRoutes(app, deps)
      webhookRoutes(app, deps)
      cliDoneRoutes(app, deps)
    },
    { prefix: opts.basePath },
  )
}

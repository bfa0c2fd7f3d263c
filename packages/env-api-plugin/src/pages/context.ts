import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Person } from '../adapters/people.js'
import type { VaultAccess } from '../adapters/vault-store.js'
import type { ResolvedOptions } from '../options.js'
import type { Domain, PushesWaiting } from '../domain/index.js'
import { html, PAGE_HEADERS, type SafeHtml } from './html.js'
import { layout } from './layout.js'
import { safeRedirectPath } from './redirect.js'

/** What every page handler needs. */
export interface PageDeps {
  readonly opts: ResolvedOptions
  /** the plugin's core domain, its refusals as page errors (pagesDomain): every read and write of the pages */
  readonly domain: Domain
}

/** A page of this plugin: `basePath` + path. */
export function pagePath(deps: PageDeps, path: string): string {
  return `${deps.opts.basePath}${path}`
}

/**
 * The signed-in person, or null after answering with a redirect to the
 * people adapter's sign-in page (returning to `returnTo`, a GET-able path).
 */
export async function personOrSignIn(deps: PageDeps, request: FastifyRequest, reply: FastifyReply, returnTo?: string): Promise<Person | null> {
  const person = await deps.opts.people.currentPerson(request)
  if (person) return person
  const back = safeRedirectPath(returnTo ?? (request.method === 'GET' ? request.url : pagePath(deps, '/')), deps.opts.basePath)
  void reply.code(303).headers(PAGE_HEADERS).redirect(deps.opts.people.signInUrl(back), 303)
  return null
}

/**
 * The pushes waiting for the person, for the top bar; null (no badge) if
 * counting failed: a page is not refused for its badge, the failure is logged.
 */
export async function waitingFor(deps: PageDeps, reply: FastifyReply, person: Person, vaults?: readonly VaultAccess[]): Promise<PushesWaiting | null> {
  try {
    return await deps.domain.pushesWaiting(person.id, vaults)
  } catch (err) {
    reply.request.log.warn({ err }, 'counting the pushes waiting failed')
    return null
  }
}

/**
 * Sends a page with PAGE_HEADERS, and in its top bar the pushes waiting for
 * the signed-in person (`waiting` when the page has counted them already).
 */
/** The shared top bar's inputs for a person (sendPage's, and the error and consent pages'). */
export async function topBar(
  deps: PageDeps,
  reply: FastifyReply,
  person: Person,
): Promise<{ personName: string; basePath: string; signOutHref: string | null; waiting: PushesWaiting | null }> {
  return {
    personName: person.name,
    basePath: deps.opts.basePath,
    signOutHref: deps.opts.people.signOutUrl?.() ?? null,
    waiting: await waitingFor(deps, reply, person),
  }
}

export async function sendPage(
  deps: PageDeps,
  reply: FastifyReply,
  input: { status?: number; title: string; body: SafeHtml; person: Person | null; waiting?: PushesWaiting | null },
): Promise<FastifyReply> {
  const waiting = input.person ? (input.waiting ?? (await waitingFor(deps, reply, input.person))) : null
  return reply
    .code(input.status ?? 200)
    .headers(PAGE_HEADERS)
    .type('text/html; charset=utf-8')
    .send(
      layout({
        title: input.title,
        body: input.body,
        personName: input.person?.name ?? null,
        basePath: deps.opts.basePath,
        signOutHref: input.person ? (deps.opts.people.signOutUrl?.() ?? null) : null,
        accountHref: input.person ? (deps.opts.people.accountUrl?.() ?? null) : null,
        waiting,
      }),
    )
}

/** 303 See Other to a page of this plugin (after a form succeeded). */
export function seeOther(deps: PageDeps, reply: FastifyReply, path: string): FastifyReply {
  return reply.headers(PAGE_HEADERS).redirect(safeRedirectPath(pagePath(deps, path), deps.opts.basePath), 303)
}

/** The hidden CSRF field; one token per rendered page. */
export function csrfField(token: string): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${token}">`
}

/**
 * A single string field of a form body; '' when absent. A repeated field
 * (parsed as an array) or anything else counts as absent.
 */
export function field(body: unknown, name: string): string {
  if (!body || typeof body !== 'object') return ''
  if (!Object.hasOwn(body, name)) return ''
  const v = (body as Record<string, unknown>)[name]
  return typeof v === 'string' ? v : ''
}

/** A moment shown to a person: `2026-11-21 23:10 UTC`, with the exact time in `datetime`. */
export function when(d: Date | null | undefined): SafeHtml {
  if (!d) return html`<span class="muted">never</span>`
  const iso = d.toISOString()
  return html`<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC</time>`
}

/** People by id, each looked up once per page. */
export function personCache(deps: PageDeps): (id: string | null) => Promise<Person | null> {
  const cache = new Map<string, Promise<Person | null>>()
  return (id) => {
    if (!id) return Promise.resolve(null)
    let p = cache.get(id)
    if (!p) {
      p = deps.opts.people.getPerson(id)
      cache.set(id, p)
    }
    return p
  }
}

/** A person for display: name and email, or a placeholder for an unknown id. */
export function personLabel(p: Person | null, fallbackId?: string | null): SafeHtml {
  if (p) return html`<span class="person">${p.name}</span> <span class="email">${p.email}</span>`
  if (fallbackId) return html`<span class="muted">unknown person</span>`
  return html`<span class="muted">—</span>`
}

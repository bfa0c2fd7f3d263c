import type { FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, type Where } from '../errors.js'
import { classifyFailure, type FailureClass } from '../failure-class.js'
import { logFailure } from '../failure-log.js'
import { html, PAGE_HEADERS, type SafeHtml } from './html.js'
import { layout, type LayoutInput } from './layout.js'

/** The statuses an error page may carry (the spec's list for the web app). */
export const PAGE_ERROR_STATUSES = [400, 403, 404, 409, 413, 429, 500, 502, 503, 504] as const
export type PageErrorStatus = (typeof PAGE_ERROR_STATUSES)[number]

const TITLES: Readonly<Record<PageErrorStatus, string>> = Object.freeze({
  400: 'Bad request',
  403: 'Not allowed',
  404: 'Not found',
  409: 'Conflict',
  413: 'Too large',
  429: 'Too many requests',
  500: 'Server error',
  502: 'Bad gateway',
  503: 'Service unavailable',
  504: 'Timed out',
})

/** The heading of an error page: what went wrong, in plain words. */
const HEADLINES: Readonly<Record<PageErrorStatus, string>> = Object.freeze({
  400: 'Something in the request was not right',
  403: 'You are not allowed to do that',
  404: 'This page does not exist, or is not shared with you',
  409: 'Someone changed this in the meantime',
  413: 'That was more than the server accepts',
  429: 'Too many tries in a short time',
  500: 'Something went wrong on the server',
  502: 'The server could not reach a service it needs',
  503: 'The service is not available right now',
  504: 'The server took too long to answer',
})

const TRY_LATER = 'Try again in a moment. If it keeps happening, send the details below to whoever runs this server.'

/** What the person can do about it. */
const ADVICE: Readonly<Record<PageErrorStatus, string>> = Object.freeze({
  400: 'Go back, check what you entered and try again.',
  403: 'If you were sending a form, reload the page and try again. If you think you should have access, ask an owner of the vault.',
  404: 'Check the address, or go back to your vaults and follow a link from there.',
  409: 'Reload the page to see the current state, then try again.',
  413: 'Send less at once: a value holds at most 64 KiB.',
  429: 'Wait a minute, then try again.',
  500: TRY_LATER,
  502: TRY_LATER,
  503: TRY_LATER,
  504: TRY_LATER,
})

/** The four fields of every failure shown to a person, plus its status. */
export interface PageFailure {
  readonly status: number
  /** what failed: an operation phrase, e.g. `adding a variable to development of vault 3f2a9c1e` */
  readonly what: string
  /** the part of the service that failed, in the spec's vocabulary (`web app`, `database`, …) */
  readonly where: string
  /** why, in words; never a value, token, password or key */
  readonly why: string
  /** the reference that finds the full record in the log */
  readonly ref: string
}

export interface ErrorPageInput extends PageFailure {
  readonly personName?: string | null
  readonly basePath?: string
  /** the rest of the shared top bar (sendPage's): sign-out link and pushes waiting */
  readonly signOutHref?: string | null
  readonly waiting?: LayoutInput['waiting']
}

/** Maps any status to one of the page statuses (e.g. 401 → 403, 507 → 413, other 5xx → 500). */
export function pageStatus(status: number): PageErrorStatus {
  if ((PAGE_ERROR_STATUSES as readonly number[]).includes(status)) return status as PageErrorStatus
  if (status === 401) return 403
  if (status === 405 || status === 415 || status === 422) return 400
  if (status === 507) return 413
  if (status >= 400 && status < 500) return 400
  return 500
}

/** The four fields as plain text, as "Copy details" gives them. */
export function failureText(f: PageFailure): string {
  return `What: ${f.what}\nWhere: ${f.where}\nWhy: ${f.why}\nReference: ${f.ref}`
}

let detailsId = 0

/**
 * The four fields and their plain-text copy, folded under "Details" (a
 * <details>: works without JavaScript), and a "Copy details" button wired
 * by /assets/envkeep.js, outside the fold so it can be used at once.
 */
export function failureDetails(f: PageFailure): SafeHtml {
  const id = `failure-${++detailsId % 1_000_000}`
  return html`<details class="failure-details"><summary>Details</summary>
<dl class="failure">
<dt>What</dt><dd>${f.what}</dd>
<dt>Where</dt><dd>${f.where}</dd>
<dt>Why</dt><dd>${f.why}</dd>
<dt>Reference</dt><dd><code>${f.ref}</code></dd>
</dl>
<p class="hint">As text, for a report:</p>
<pre id="${id}">${failureText(f)}</pre>
</details>
<button type="button" class="copy secondary" data-copy="${id}">Copy details</button>`
}

/**
 * A refused form submission, shown at the top of the page it came from;
 * its sentence ends with the reference.
 */
export function refusalBox(f: PageFailure): SafeHtml {
  return html`<section class="refusal" role="alert" aria-labelledby="refusal-title">
<h2 id="refusal-title">That did not work</h2>
<p>${capitalize(f.what)} failed: ${f.why}. Reference: <code>${f.ref}</code></p>
${failureDetails(f)}
</section>`
}

/**
 * A whole error page: first what went wrong and what to do, in plain
 * words; then what, where, why and reference under "Details", and "Copy details".
 * Exported for the self-hosting server's own pages (login, setup).
 */
export function renderErrorPage(input: ErrorPageInput): string {
  const status = pageStatus(input.status)
  const title = TITLES[status]
  const base = input.basePath ?? ''
  const body = html`<section class="error-page">
<p class="status">Error ${status} · ${title}</p>
<h1>${HEADLINES[status]}</h1>
<p class="lead">${capitalize(input.what)} failed: ${input.why}.</p>
<p class="advice"><strong>What to do:</strong> ${ADVICE[status]}</p>
<p><a href="${base}/">Back to your vaults</a></p>
${failureDetails({ ...input, status })}
</section>`
  return layout({
    title: `${status} ${title}`,
    body,
    personName: input.personName ?? null,
    basePath: base,
    signOutHref: input.signOutHref ?? null,
    waiting: input.waiting ?? null,
  })
}

/** Sends a rendered error page with PAGE_HEADERS and its status. */
export function sendErrorPage(reply: FastifyReply, input: ErrorPageInput): FastifyReply {
  return reply.code(pageStatus(input.status)).headers(PAGE_HEADERS).type('text/html; charset=utf-8').send(renderErrorPage(input))
}

function capitalize(s: string): string {
  return s.length === 0 ? s : s[0]!.toUpperCase() + s.slice(1)
}

/** An error of a page, as thrown by page handlers: like ApiError with a page status. */
export function pageError(status: number, where: Where, reason: string, cause?: unknown): ApiError {
  return new ApiError({ status, code: 'page_error', where, reason, cause })
}

/**
 * Turns anything thrown on a page into the failure a person sees, logging
 * the full record under a new ref (the stack only for 5xx; never a body,
 * value, token or password). Unknown errors become a generic 500.
 */
export function toPageFailure(err: unknown, request: FastifyRequest, what?: string): PageFailure {
  const operation = what ?? request.envkeepOperation ?? defaultOperation(request)
  const c = classifyFailure(err)
  const { status: raw, where, why } = pageWords(c)
  const status = pageStatus(raw)
  const known = c.kind === 'known' ? c.error : err instanceof ApiError ? err : null
  const cause = known && known.cause !== undefined ? known.cause : err
  const ref = logFailure(request, 'page', { status, where, reason: why, cause })
  return { status, what: operation, where, why, ref }
}

function defaultOperation(request: FastifyRequest): string {
  return request.method === 'GET' || request.method === 'HEAD' ? 'showing this page' : 'sending this form'
}

/** A failure's class in a person's words. */
function pageWords(c: FailureClass): { status: number; where: string; why: string } {
  switch (c.kind) {
    case 'known':
      return { status: c.error.status, where: c.error.where, why: c.error.reason }
    case 'database':
      return { status: c.status, where: 'database', why: c.error.message }
    case 'bug':
      return { status: 500, where: 'web app', why: 'an internal error occurred; quote the reference in a report' }
    case 'client':
      if (c.problem === 'csrf')
        return { status: 403, where: 'web app', why: 'the form was not sent from this site or has gone stale; reload the page and try again' }
      if (c.problem === 'too_large') return { status: 413, where: 'web app', why: 'the form is larger than the server accepts' }
      if (c.problem === 'media_type') return { status: 400, where: 'web app', why: 'the form was sent in a format the server does not accept' }
      return { status: c.status, where: 'web app', why: 'the request could not be read' }
  }
}

import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.js'

/**
 * The pages' form parser (`application/x-www-form-urlencoded`), strict about text (issue 25):
 * a body whose bytes are not UTF-8, or a `%XX` escape that does not decode to UTF-8 (`%FF`, a
 * CESU-8 surrogate `%ED%A0%80`), is refused with 400 instead of being stored as U+FFFD or as
 * the literal `%FF` (what @fastify/formbody's parser does). Same shape otherwise: a field sent
 * once is a string, repeated an array; `+` is a space.
 */

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

export const FORM_NOT_UTF8 = 'the form holds bytes that are not UTF-8 text; nothing was stored (send the text as UTF-8)'

function notUtf8(): ApiError {
  return new ApiError({ status: 400, code: 'invalid_request', where: 'web app', reason: FORM_NOT_UTF8 })
}

export function parseStrictForm(body: Buffer): Record<string, string | string[]> {
  let text: string
  try {
    text = UTF8.decode(body)
  } catch {
    throw notUtf8()
  }
  const out: Record<string, string | string[]> = Object.create(null)
  if (text.length === 0) return out
  for (const pair of text.split('&')) {
    if (pair === '') continue
    const eq = pair.indexOf('=')
    let key: string
    let value: string
    try {
      key = decodeURIComponent((eq === -1 ? pair : pair.slice(0, eq)).replace(/\+/g, ' '))
      value = eq === -1 ? '' : decodeURIComponent(pair.slice(eq + 1).replace(/\+/g, ' '))
    } catch {
      throw notUtf8()
    }
    const had = out[key]
    out[key] = had === undefined ? value : Array.isArray(had) ? [...had, value] : [had, value]
  }
  return out
}

/** Replaces any inherited form parser in `app`'s scope with the strict one. */
export function useStrictForms(app: FastifyInstance, bodyLimit: number): void {
  if (app.hasContentTypeParser('application/x-www-form-urlencoded')) app.removeContentTypeParser('application/x-www-form-urlencoded')
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'buffer', bodyLimit }, function strictForm(_request, body, done) {
    try {
      done(null, parseStrictForm(body as Buffer))
    } catch (err) {
      done(err as Error, undefined)
    }
  })
}

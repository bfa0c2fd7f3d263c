import t from 'tap'
import type { FastifyRequest } from 'fastify'
import { toApiError } from '../src/error-handler.js'
import { ApiError, errors, StorageError } from '../src/errors.js'
import { classifyFailure } from '../src/failure-class.js'
import { toOAuthError } from '../src/oauth/oauth-errors.js'
import { toPageFailure } from '../src/pages/error.js'

// Issue 10, item 10: one classifier of failures shared by the JSON, OAuth and page renderers.
// The same database error has the same status on every surface (the pages used to answer a
// unique violation with 409 where the API answered 500), and no framework message is quoted.

const logged: unknown[] = []
const request = {
  method: 'POST',
  url: '/x',
  routeOptions: { url: '/x' },
  envkeepOperation: null,
  log: { error: (r: unknown) => logged.push(r), info: (r: unknown) => logged.push(r), warn: (r: unknown) => logged.push(r) },
} as unknown as FastifyRequest

const fst = (code: string, statusCode: number, message = 'body: canary-echoed-request-text') => Object.assign(new Error(message), { code, statusCode })

t.test('a storage failure has one status on the API, OAuth and the pages', async (t) => {
  for (const [sqlstate, status] of [
    ['23505', 500],
    ['23503', 500],
    ['57014', 504],
    ['55P03', 504],
    ['08006', 503],
  ] as const) {
    const err = new StorageError(sqlstate, 'some_constraint')
    t.equal(toApiError(err).status, status, `API ${sqlstate}`)
    t.equal(toPageFailure(err, request).status, status, `page ${sqlstate}`)
    t.equal(toOAuthError(err).status, status, `OAuth ${sqlstate}`)
  }
  // by shape too: a StorageError from another copy of the package
  const foreign = Object.assign(new Error('57014 statement timeout'), { name: 'StorageError', sqlstate: '57014', status: 504 })
  t.equal(classifyFailure(foreign).kind, 'database')
  t.equal(toApiError(foreign).status, 504)
  t.equal(toPageFailure(foreign, request).status, 504)
})

t.test("the framework's client errors: their status, never their message", async (t) => {
  const cases: [Error, number, number, number][] = [
    // [error, API status, page status, OAuth status]
    [fst('FST_ERR_CTP_BODY_TOO_LARGE', 413), 413, 413, 400],
    [fst('FST_ERR_CTP_INVALID_MEDIA_TYPE', 415), 415, 400, 400],
    [fst('FST_ERR_VALIDATION', 400), 400, 400, 400],
    [fst('FST_CSRF_INVALID_TOKEN', 403), 400, 403, 400],
    [fst('FST_ERR_SOMETHING', 400), 400, 400, 400],
  ]
  for (const [err, api, page, oauth] of cases) {
    const a = toApiError(err)
    t.equal(a.status, api, `API ${(err as unknown as { code: string }).code}`)
    t.notMatch(a.reason, 'canary-echoed', 'the message is not quoted')
    const p = toPageFailure(err, request)
    t.equal(p.status, page, `page ${(err as unknown as { code: string }).code}`)
    t.notMatch(p.why, 'canary-echoed')
    const o = toOAuthError(err)
    t.equal(o.status, oauth)
    t.notMatch(o.description, 'canary-echoed')
  }
})

t.test('our own errors stand; anything else is a bug answered 500 with nothing of it on the wire', async (t) => {
  const own = errors.notFound('the vault or environment')
  t.equal(toApiError(own), own)
  t.equal(toPageFailure(own, request).status, 404)
  const bug = new TypeError('canary-bug-detail')
  t.equal(classifyFailure(bug).kind, 'bug')
  t.equal(toApiError(bug).status, 500)
  t.notMatch(toApiError(bug).reason, 'canary-bug-detail')
  t.equal(toPageFailure(bug, request).status, 500)
  t.notMatch(toPageFailure(bug, request).why, 'canary-bug-detail')
  t.equal(toOAuthError(bug).status, 500)
  t.ok(own instanceof ApiError)
  // a 5xx status from a thrown object that is not ours is still a bug, not a client error
  t.equal(classifyFailure(fst('FST_ERR_INTERNAL', 500)).kind, 'bug')
})

import t from 'tap'
import { renderErrorPage, PAGE_ERROR_STATUSES, pageStatus } from '../../src/pages/error.js'
import { StorageError } from '../../src/errors.js'
import { build, session } from './helpers.js'

t.test('renderErrorPage: every page status with what, where, why, reference and Copy details', async (t) => {
  for (const status of PAGE_ERROR_STATUSES) {
    const page = renderErrorPage({ status, what: 'signing in', where: 'web app', why: 'the <b>reason</b>', ref: 'ABCDEFGH12', basePath: '/base' })
    t.match(page, `Error ${status}`, String(status))
    t.match(page, /<dt>What<\/dt><dd>signing in<\/dd>/)
    t.match(page, /<dt>Where<\/dt><dd>web app<\/dd>/)
    t.match(page, /<dt>Why<\/dt><dd>the &lt;b&gt;reason&lt;\/b&gt;<\/dd>/)
    t.match(page, /<dt>Reference<\/dt><dd><code>ABCDEFGH12<\/code><\/dd>/)
    t.match(page, /<pre id="[^"]+">What: signing in\nWhere: web app\nWhy: the &lt;b&gt;reason&lt;\/b&gt;\nReference: ABCDEFGH12<\/pre>/)
    t.match(page, /<button type="button" class="copy secondary" data-copy="[^"]+">Copy details<\/button>/)
    // plain words first: what went wrong and what to do, before the folded details
    const headline = page.indexOf('<h1>'),
      advice = page.indexOf('What to do:'),
      fold = page.indexOf('<details class="failure-details"><summary>Details</summary>')
    t.ok(headline > 0 && advice > headline && fold > advice, 'headline, then what to do, then Details')
    t.ok(page.indexOf('<dt>What</dt>') > fold && page.indexOf('<pre id=') > fold, 'the four fields and their text sit under Details')
    t.notMatch(page.slice(headline, fold), /ABCDEFGH12/, 'the reference is kept below, under Details')
    t.match(page, 'href="/base/assets/envkeep.css"')
    t.match(page, '<script src="/base/assets/envkeep.js" defer></script>')
    t.notMatch(page, /<script>|style="/)
  }
  t.equal(pageStatus(401), 403)
  t.equal(pageStatus(507), 413)
  t.equal(pageStatus(418), 400)
  t.equal(pageStatus(501), 500)
})

t.test('an unknown error is a generic 500 page; the full record is logged under the same reference', async (t) => {
  const b = await build(t)
  b.storage.listVaults = async () => {
    throw new TypeError('boom at the secret place')
  }
  const res = await session(b.app, 'owner').get('/')
  t.equal(res.statusCode, 500)
  t.match(res.body, 'an internal error occurred; quote the reference in a report')
  t.notMatch(res.body, 'boom')
  const ref = /Reference: ([0-9A-Z]{10})/.exec(res.body)?.[1]
  t.ok(ref)
  const line = b.logs.find((l) => l.includes(ref!))
  t.ok(line, 'logged with the ref')
  t.match(line, 'boom at the secret place')
  t.match(line, '"level":50')
})

t.test('a database timeout is a 504 page naming the SQLSTATE', async (t) => {
  const b = await build(t)
  b.storage.listVaults = async () => {
    throw new StorageError('57014', 'function read_vault')
  }
  const res = await session(b.app, 'owner').get(`/v/${b.vaultId}`)
  t.equal(res.statusCode, 504)
  t.match(res.body, '<dt>Where</dt><dd>database</dd>')
  t.match(res.body, '57014 statement timeout')
})

t.test('a too-large form is a 413 error page', async (t) => {
  const b = await build(t)
  const s = session(b.app, 'owner')
  await s.get('/')
  const res = await s.post('/vaults', { name: 'x'.repeat(300 * 1024) })
  t.equal(res.statusCode, 413)
  t.match(res.body, 'Error 413')
})

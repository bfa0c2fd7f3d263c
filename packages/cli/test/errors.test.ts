import { createServer } from 'node:net'
import t from 'tap'
import { clean, CliError, createPaint, describeNetworkFailure, renderError } from '../src/errors.js'

t.test('a failure with no answer is named: DNS, refused, reset, TLS, timeout', async (t) => {
  const wrapped = (cause: unknown) => Object.assign(new TypeError('fetch failed'), { cause })
  const cases: Array<[unknown, RegExp]> = [
    [wrapped(Object.assign(new Error('x'), { code: 'ENOTFOUND' })), /^DNS lookup failed \(name not found\) \(ENOTFOUND\)$/],
    [wrapped(Object.assign(new Error('x'), { code: 'EAI_AGAIN' })), /^DNS lookup failed/],
    [wrapped(Object.assign(new Error('x'), { code: 'ECONNREFUSED' })), /^connection refused \(ECONNREFUSED\)$/],
    [wrapped(Object.assign(new Error('x'), { code: 'ECONNRESET' })), /^connection reset/],
    [wrapped(Object.assign(new Error('x'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' })), /^TLS failure \(DEPTH_ZERO_SELF_SIGNED_CERT\)$/],
    [wrapped(Object.assign(new Error('x'), { code: 'ERR_TLS_CERT_ALTNAME_INVALID' })), /^TLS failure/],
    [wrapped(Object.assign(new Error('x'), { code: 'UND_ERR_CONNECT_TIMEOUT' })), /^timed out while connecting/],
    [new DOMException('The operation was aborted due to timeout', 'TimeoutError'), /^timed out$/],
    // happy eyeballs: an AggregateError of per-address failures
    [wrapped(Object.assign(new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })]), { code: undefined })), /^connection refused/],
    [new Error('something else'), /^the request failed$/],
  ]
  for (const [err, re] of cases) t.match(describeNetworkFailure(err), re)
})

t.test('a server that accepts but never answers: timed out, with the host', async (t) => {
  const { runCli, tempConfig } = await import('./helpers/run-cli.js')
  const sockets = new Set<import('node:net').Socket>()
  const silent = createServer((s) => void sockets.add(s))
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()))
  t.teardown(() => {
    for (const s of sockets) s.destroy()
    silent.close()
  })
  const port = (silent.address() as { port: number }).port
  const dir = await tempConfig(t)
  const r = await runCli(['login', '--no-browser', '--base-url', `http://127.0.0.1:${port}`], { env: { ENVKEEP_CONFIG_DIR: dir }, timeoutMs: 200 })
  t.equal(r.code, 1)
  t.match(r.stderr, `no answer from 127.0.0.1:${port}: timed out`)
})

t.test('the rendering: sentence, then reason with code, where, ref; hint last', async (t) => {
  const text = renderError(
    new CliError('could not read production of vault "app"', {
      server: {
        status: 403,
        error: 'forbidden',
        message: 'reading production of vault 3f2a9c1e: your role (editor) cannot read owners-only environments',
        where: 'env API: database (your role)',
        ref: 'K7Q2M9X1AB',
      },
      hint: 'ask an owner',
    }),
    createPaint(false),
  )
  t.equal(
    text,
    [
      'error: could not read production of vault "app"',
      '  reason: reading production of vault 3f2a9c1e: your role (editor) cannot read owners-only environments (forbidden, HTTP 403)',
      '  where:  env API: database (your role)',
      '  ref:    K7Q2M9X1AB  (quote this reference when reporting the problem)',
      '  ask an owner',
      '',
    ].join('\n'),
  )
})

t.test('server text cannot drive the terminal: control characters and bidi overrides removed, length capped', async (t) => {
  t.equal(clean('bad\u001b[2J\u001b]0;title\u0007 thing\r\n'), 'bad [2J ]0;title  thing')
  t.equal(clean('a\u202eb'), 'a b')
  t.equal(clean('x'.repeat(600)).length, 501)
  const text = renderError(new CliError('failed', { server: { status: 500, message: '\u001b[31mred', ref: '\u001bREF' } }), createPaint(false))
  t.notMatch(text, '\u001b')
})

import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { build, WWW_AUTHENTICATE } from './helpers.js'

/** A raw request on the wire, so header lines are sent exactly as given. */
function send(
  port: number,
  path: string,
  headers: Record<string, string | string[]>,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET' })
    for (const [k, v] of Object.entries(headers)) req.setHeader(k, v)
    req.on('response', (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('on a real server: two Authorization header lines are refused, one is accepted', async (t) => {
  const b = await build(t)
  const token = await b.signIn('alice')
  await b.app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = b.app.server.address() as AddressInfo

  const one = await send(port, '/api/env/vaults', { authorization: `Bearer ${token}` })
  t.equal(one.status, 200)
  t.equal(one.headers['cache-control'], 'no-store, private')

  const two = await send(port, '/api/env/vaults', { authorization: [`Bearer ${token}`, `Bearer ${token}`] })
  t.equal(two.status, 401)
  t.equal(two.headers['www-authenticate'], WWW_AUTHENTICATE)
  t.notOk(two.body.includes(token))
  t.same(Object.keys(JSON.parse(two.body)).sort(), ['error', 'message', 'ref', 'where'])

  const mixed = await send(port, '/api/env/vaults', { authorization: [`Bearer ${token}`, 'Basic eDp5'] })
  t.equal(mixed.status, 401, 'a bearer line beside another credential')
})

t.test('on a real server: a read larger than the socket takes at once arrives whole (its plaintext is freed only once sent)', async (t) => {
  const b = await build(t)
  const token = await b.signIn('alice')
  const v = await b.createVault('alice')
  // 8 MB: more than the kernel takes in one write on loopback, so the answer is still being sent after send() returns
  const values: Record<string, string> = {}
  for (let i = 0; i < 128; i++) values[`V${String(i).padStart(3, '0')}`] = String.fromCharCode(97 + (i % 26)).repeat(65_000)
  await b.setValues(v, 'development', values)
  await b.app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = b.app.server.address() as AddressInfo
  for (const round of ['first read (values opened one by one)', 'second read (the snapshot)']) {
    const r = await send(port, `/api/env/${v}/development`, { authorization: `Bearer ${token}` })
    t.equal(r.status, 200, round)
    t.same(JSON.parse(r.body), { vault: v, environment: 'development', variables: values }, round)
  }
})

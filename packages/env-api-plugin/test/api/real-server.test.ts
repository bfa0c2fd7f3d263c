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

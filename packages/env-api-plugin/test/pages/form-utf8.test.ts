import t from 'tap'
import { build, session } from './helpers.js'

// Issue 25: nothing may be stored other than what was sent. A form whose bytes are not UTF-8,
// or whose %XX escapes do not decode to UTF-8, was stored as U+FFFD or as the literal "%FF";
// it is refused (400) and nothing is stored.

t.test('a form value that is not UTF-8 is refused, nothing stored', async (t) => {
  const b = await build(t)
  const editor = session(b.app, 'editor')
  await editor.get(`/v/${b.vaultId}?env=development`)
  const cookie = [...editor.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  const send = (value: Buffer) =>
    b.app.inject({
      method: 'POST',
      url: `/v/${b.vaultId}/variables/add`,
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: Buffer.concat([Buffer.from(`_csrf=${encodeURIComponent(editor.token)}&environment=development&name=A&value=canary`), value]),
    })
  for (const [name, value] of [
    ['a raw 0xFF byte', Buffer.from([0xff])],
    ['a raw CESU-8 surrogate', Buffer.from([0xed, 0xa0, 0x80])],
    ['an escaped 0xFF', Buffer.from('%FF')],
    ['an escaped CESU-8 surrogate', Buffer.from('%ED%A0%80')],
    ['a truncated escape sequence', Buffer.from('%E2%82')],
  ] as const) {
    const r = await send(value)
    t.equal(r.statusCode, 400, name)
    t.match(r.body, 'not UTF-8', name)
    t.notMatch(r.body, 'canary', 'the value is not echoed')
  }
  t.same(await b.current('development'), {}, 'nothing stored')
  // the same form with UTF-8, raw or escaped, is stored as sent
  t.equal((await send(Buffer.from('-€'))).statusCode, 303)
  t.same(await b.current('development'), { A: 'canary-€' })
  t.equal((await editor.post(`/v/${b.vaultId}/variables/change`, { environment: 'development', name: 'A', value: 'a+b %FF é' })).statusCode, 303)
  t.same(await b.current('development'), { A: 'a+b %FF é' }, 'what was typed, escapes and plus signs included')
})

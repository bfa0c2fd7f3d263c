import t from 'tap'
import { build, session } from './helpers.js'

t.test('/cli/signed-in and /cli/denied: styled pages saying what happened and that the tab can be closed', async (t) => {
  const b = await build(t, { baseUrl: 'http://127.0.0.1/team' })
  for (const who of ['owner', null] as const) {
    const s = session(b.app, who)
    const ok = await s.get('/team/cli/signed-in')
    t.equal(ok.statusCode, 200, `signed-in page, person ${who ?? 'unknown'}`)
    t.match(ok.headers['content-security-policy'], "script-src 'self'")
    t.equal(ok.headers['cache-control'], 'no-store, private')
    t.match(ok.body, '<h1>The command line is signed in</h1>')
    t.match(ok.body, 'You can close this tab')
    t.match(ok.body, '<link rel="stylesheet" href="/team/assets/envkeep.css">', 'styled, under the base path')
    t.match(ok.body, 'href="/team/sign-ins"')
    const denied = await s.get('/team/cli/denied')
    t.equal(denied.statusCode, 200)
    t.match(denied.body, '<h1>The sign-in was denied</h1>')
    t.match(denied.body, 'You can close this tab')
    t.notMatch(denied.body, 'signed in</h1>', 'the two pages say different things')
    if (who) t.match(ok.body, /class="who">Olga/, 'the top bar names the person when known')
    else t.notMatch(ok.body, 'class="who"')
  }
})

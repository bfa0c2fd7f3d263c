import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const here = dirname(fileURLToPath(import.meta.url))
const doc = readFileSync(join(here, '../../../../docs/oauth.md'), 'utf8')
const src = (p: string) => readFileSync(join(here, '../../src', p), 'utf8')

t.test('docs/oauth.md documents every error code the token endpoint can give, with its status', async (t) => {
  const rows = doc.split('\n').filter((l) => /^\| [\d, ]+ \| `[a-z_]+` \|/.test(l))
  const documented = new Map(rows.map((l) => [/`([a-z_]+)`/.exec(l)![1]!, l]))
  const ctor = /new OAuthError\((\d+), '([a-z_]+)'/g
  const code = src('oauth/oauth-errors.ts')
  const found = [...code.matchAll(ctor)].map((m) => [Number(m[1]), m[2]!] as const)
  t.ok(found.length >= 8, 'the constructors were found')
  for (const [status, error] of found) {
    const row = documented.get(error)
    t.ok(row, `${error} is documented`)
    t.match(row ?? '', new RegExp(`^\\| [\\d, ]*${status}`), `${error} with status ${status}`)
  }
})

t.test('docs/oauth.md documents every error the authorization endpoint redirects with', async (t) => {
  // the checks live in oauth/authorize-request.ts (shared with the MCP consent), the route in routes/oauth/authorize.ts
  const code = src('routes/oauth/authorize.ts') + src('oauth/authorize-request.ts')
  const errors = new Set([...code.matchAll(/(?:fail\(|error: )'([a-z_]+)'/g)].map((m) => m[1]!))
  t.ok(errors.size >= 5)
  for (const e of errors) t.match(doc, new RegExp(`\\| \`${e}\` \\|`), `${e} is documented`)
})

import t from 'tap'
import { oauthStoreContract } from '@envkeep/env-api-plugin/testing'
import { createSqliteStorage, openDatabase } from '../src/index.js'

// The shared OAuth store contract, on SQLite :memory:.
for (const c of oauthStoreContract) {
  t.test(c.name, () =>
    c.run(async () => {
      const store = await createSqliteStorage({ filename: ':memory:' })
      return { store, close: () => store.close() }
    }),
  )
}

t.test('only hashes are stored: no column holds a token-shaped value', async (t) => {
  const d = await openDatabase({ filename: ':memory:' })
  t.teardown(() => d.close())
  const tables = ['oauth_codes', 'sign_ins', 'access_tokens', 'refresh_tokens']
  for (const table of tables) {
    const cols = d.sqlite.prepare(`select name from pragma_table_info(?)`).all(table) as { name: string }[]
    t.ok(cols.length > 0, `${table} exists`)
    t.notOk(
      cols.some((c) => /^(token|code|access_token|refresh_token)$/.test(c.name)),
      `${table} has no plain token column`,
    )
  }
})

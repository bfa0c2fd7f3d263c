import t from 'tap'
import { clientRegistrationStoreContract } from '@envkeep/env-api-plugin/testing'
import { createSqliteStorage } from '../src/index.js'

for (const c of clientRegistrationStoreContract) {
  t.test(c.name, async (t) => {
    await c.run(async () => {
      const s = await createSqliteStorage({ filename: ':memory:' })
      return { store: s as never, close: () => s.close() }
    })
    t.pass('the case holds')
  })
}

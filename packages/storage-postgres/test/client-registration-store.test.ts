import t from 'tap'
import { clientRegistrationStoreContract } from '@envkeep/env-api-plugin/testing'
import { freshStores } from './contract-fixture.js'

t.test('client registration contract on PostgreSQL', async (t) => {
  const make = await freshStores(t)
  if (!make) return
  for (const c of clientRegistrationStoreContract) {
    t.test(c.name, async (t) => {
      await c.run(async () => {
        const s = await make()
        return { store: s as never, close: () => s.close() }
      })
      t.pass('the case holds')
    })
  }
})

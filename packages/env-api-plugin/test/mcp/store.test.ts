import t from 'tap'
import { clientRegistrationStoreContract, createMemoryStorage } from '../../src/testing/index.js'

for (const c of clientRegistrationStoreContract) {
  t.test(`memory: ${c.name}`, async (t) => {
    await c.run(async () => {
      const s = createMemoryStorage()
      return { store: s as never, close: () => s.close() }
    })
    t.pass('the case holds')
  })
}

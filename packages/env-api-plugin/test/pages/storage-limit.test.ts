import t from 'tap'
import { variableMetas } from '@envkeep/env-api-plugin/testing'
import { build, session } from './helpers.js'

// Hardening finding 5: the plan's storage limit was enforced only on
// pushes; the vault page's add and change wrote past it. Every path that
// stores a value now passes the limit to storage, which checks it in the
// write's transaction (pending pushes count, as for pushes).

const SEAL_OVERHEAD = 28 // nonce and tag around each sealed value

t.test("page add past the plan's variable limit: 403 with the plan-limit message, nothing stored", async (t) => {
  const b = await build(t, { plans: { 'self-hosted': { maxVariables: 3, maxBytes: 1_000_000 } } })
  const url = `/v/${b.vaultId}`
  const s = session(b.app, 'owner')
  await s.get(url)
  t.equal((await s.post(`${url}/variables/add`, { environment: 'development', name: 'A', value: 'a' })).statusCode, 303)
  t.equal((await s.post(`${url}/variables/add`, { environment: 'production', name: 'B', value: 'b' })).statusCode, 303)
  await b.push('preview', { STAGED: 'p' }) // a pending push's staged value counts
  const over = await s.post(`${url}/variables/add`, { environment: 'development', name: 'C', value: 'c' })
  t.equal(over.statusCode, 403)
  t.match(over.body, new RegExp(`vault ${b.vaultId.slice(0, 8)} is at its storage limit of 3 variables on plan self-hosted; with this change it would use 4`))
  t.same(
    (await variableMetas(b.storage, b.vaultId, 'development')).map((v) => v.name),
    ['A'],
    'C was not stored',
  )
  t.notOk(
    (await b.storage.listAccessLog(b.vaultId, { limit: 50 })).some((l) => l.names.includes('C')),
    'nor logged',
  )
  // changing a value adds no variable
  t.equal((await s.post(`${url}/variables/change`, { environment: 'development', name: 'A', value: 'a2' })).statusCode, 303)
})

t.test("page change past the plan's byte limit: 403, the old value kept; a smaller value fits", async (t) => {
  const b = await build(t, { plans: { 'self-hosted': { maxVariables: 100, maxBytes: 200 } } })
  const url = `/v/${b.vaultId}`
  const s = session(b.app, 'owner')
  await s.get(url)
  t.equal((await s.post(`${url}/variables/add`, { environment: 'development', name: 'A', value: 'x'.repeat(100) })).statusCode, 303)
  const [before] = (await b.storage.readCurrent(b.vaultId, 'development')).variables
  t.equal(before?.sealed.byteLength, 100 + SEAL_OVERHEAD)
  const grow = await s.post(`${url}/variables/change`, { environment: 'development', name: 'A', value: 'y'.repeat(180) })
  t.equal(grow.statusCode, 403)
  t.match(grow.body, /is at its storage limit of 200 bytes of stored values on plan self-hosted; with this change it would use 208/)
  const add = await s.post(`${url}/variables/add`, { environment: 'preview', name: 'B', value: 'z'.repeat(80) })
  t.equal(add.statusCode, 403, 'a new value past the byte limit too')
  t.equal((await s.post(`${url}/variables/change`, { environment: 'development', name: 'A', value: 'y'.repeat(150) })).statusCode, 303, 'within the limit')
  t.same(await variableMetas(b.storage, b.vaultId, 'preview'), [])
})

import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { sql } from 'kysely'
import { mintSignIn } from '@envkeep/env-api-plugin/testing'
import { createPostgresStorage } from '@envkeep/storage-postgres'
import { freePort, spawnNode, untilSeen, withTestDatabase, type Spawned } from '@envkeep/test-support'
import { runCli, tempDir } from './helpers.js'
import { hiddenFields, httpBrowser, setUpFirstAccount } from './http-flows.js'

// Issue 10: several envkeep-server processes on one PostgreSQL behave as one service.
// Two real `start` processes, one database, everything checked from outside.

t.setTimeout(240_000)

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url))
const VALUE = 'canary-pg-value-1'
const PUSHED = 'canary-pg-pushed-2'

t.test('two envkeep-server processes on one PostgreSQL are one service', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) return
  const dir = tempDir(t)
  const data = join(dir, 'data')
  const [p1, p2] = [await freePort(), await freePort()]
  const base = `http://127.0.0.1:${p1}` // behind a load balancer both serve one base URL
  const env = { ENVKEEP_DATA_DIR: data, ENVKEEP_DATABASE_URL: url, ENVKEEP_BASE_URL: base, ENVKEEP_DATABASE_POOL: '4' }

  t.equal((await runCli(['init'], env, '', dir)).code, 0, 'init creates the schema and the key file')
  const servers: Spawned[] = []
  const start = async (port: number): Promise<Spawned> => {
    const s = spawnNode(BIN, ['start', '--port', String(port)], { env, cwd: dir })
    servers.push(s)
    await s.waitFor('stdout', /envkeep-server started/)
    return s
  }
  t.teardown(() => {
    for (const s of servers) if (s.child.exitCode === null) s.child.kill('SIGKILL')
  })
  const one = await start(p1)
  const two = await start(p2)
  const at = (port: number) => `http://127.0.0.1:${port}`

  // the setup link of the second start works on the first process, and its session on both
  const setupLink = (await two.waitFor('stderr', /(http:\/\/\S+\/setup\?token=[A-Za-z0-9_-]{43})/))[1]!.replace(base, at(p1))
  const browser = httpBrowser(base)
  t.equal(await setUpFirstAccount(browser, at(p1), setupLink, { email: 'owner@example.com', name: 'Owner', password: 'canary-pg-password' }), 303)
  for (const port of [p1, p2]) t.equal((await browser.get(`${at(port)}/`)).status, 200, `signed in on the process at ${port}`)

  // a vault and a value by admin command (a third process), read through both
  const vault = await runCli(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'owner@example.com', '--json'], env, '', dir)
  t.equal(vault.code, 0, vault.stderr)
  const vaultId = (JSON.parse(vault.stdout.trim().split('\n').pop()!) as { vault: { id: string } }).vault.id
  t.equal((await runCli(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'DB'], env, VALUE, dir)).code, 0)
  const storage = await createPostgresStorage({ connectionString: url, pool: 2 })
  t.teardown(() => storage.close())
  const owner = ((await sql`select id from accounts where lower(email) = 'owner@example.com'`.execute(storage.database.db)).rows[0] as { id: string }).id
  const { accessToken } = await mintSignIn(storage, { baseUrl: base, personId: owner })
  const auth = { authorization: `Bearer ${accessToken}` }
  for (const port of [p1, p2]) {
    const r = await fetch(`${at(port)}/api/env/${vaultId}/development`, { headers: auth })
    t.equal(r.status, 200, `read through ${port}`)
    t.same(((await r.json()) as { variables: Record<string, string> }).variables, { DB: VALUE })
  }

  // a push created through one process is applied on the other's review page
  const created = await fetch(`${at(p1)}/api/env/${vaultId}/development/imports`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ variables: { PUSHED } }),
  })
  t.equal(created.status, 201)
  const { import: importId } = (await created.json()) as { import: string }
  const review = `${at(p2)}/v/${vaultId}/variables/imports/${importId}`
  const page = await browser.get(review)
  t.equal(page.status, 200)
  t.equal((await browser.post(`${review}/apply`, { _csrf: hiddenFields(page.html)._csrf! })).status, 303, 'applied through the other process')
  // the first process hears the change through the database (issue 20: within a second, no clock here)
  const after = await untilSeen(
    () =>
      fetch(`${at(p1)}/api/env/${vaultId}/development`, { headers: auth }).then(
        async (r) => ((await r.json()) as { variables: Record<string, string> }).variables,
      ),
    (v) => 'PUSHED' in v,
  )
  t.same(after, { DB: VALUE, PUSHED }, 'and read back through the first')

  // the per-sign-in limit is shared: 60 a minute over both processes, the 61st refused whichever answers
  const limited = await mintSignIn(storage, { baseUrl: base, personId: owner })
  const statuses: number[] = []
  for (let i = 0; i < 61; i++) {
    const r = await fetch(`${at(i % 2 ? p2 : p1)}/api/env/vaults`, { headers: { authorization: `Bearer ${limited.accessToken}` } })
    statuses.push(r.status)
    await r.arrayBuffer()
  }
  t.same(statuses.slice(0, 60), Array(60).fill(200), '60 requests spread over both')
  t.equal(statuses[60], 429, 'the 61st is refused')
  // and at once: concurrent requests are counted together (one statement a turn, issue 20), each its own number
  const burst = await mintSignIn(storage, { baseUrl: base, personId: owner })
  const burstStatuses = await Promise.all(
    Array.from({ length: 70 }, (_, i) =>
      fetch(`${at(i % 2 ? p2 : p1)}/api/env/vaults`, { headers: { authorization: `Bearer ${burst.accessToken}` } }).then(async (r) => {
        await r.arrayBuffer()
        return r.status
      }),
    ),
  )
  t.same(
    [burstStatuses.filter((s) => s === 200).length, burstStatuses.filter((s) => s === 429).length],
    [60, 10],
    '70 concurrent requests over both processes: 60 answered, 10 refused',
  )

  // a revocation reaches every process (issue 20: within a second, measured by the bench's revoke-propagation)
  t.equal((await fetch(`${at(p2)}/api/env/vaults`, { headers: auth })).status, 200)
  t.equal((await runCli(['admin', 'signins', 'revoke', '--email', 'owner@example.com'], env, '', dir)).code, 0)
  for (const port of [p1, p2]) {
    const status = await untilSeen(
      () =>
        fetch(`${at(port)}/api/env/vaults`, { headers: auth }).then(async (r) => {
          await r.arrayBuffer()
          return r.status
        }),
      (s) => s === 401,
    )
    t.equal(status, 401, `revoked at ${port}`)
  }

  // kill -9 of one process in the middle of pushes loses no push it acknowledged
  const pusher = await mintSignIn(storage, { baseUrl: base, personId: owner })
  const acknowledged: string[] = []
  let stop = false
  // the kill comes once the process has acknowledged a few pushes (its answers are the signal), in the middle of more
  let inFlight!: () => void
  const pushesUnderWay = new Promise<void>((resolve) => (inFlight = resolve))
  const pushing = (async () => {
    for (let i = 0; !stop && i < 500; i++) {
      try {
        const r = await fetch(`${at(p1)}/api/env/${vaultId}/development/imports`, {
          method: 'POST',
          headers: { authorization: `Bearer ${pusher.accessToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({ variables: { [`K${i}`]: `v${i}` } }),
        })
        if (r.status === 201) acknowledged.push(((await r.json()) as { import: string }).import)
        if (acknowledged.length === 5) inFlight()
      } catch {
        return // the process is gone
      }
    }
  })()
  await Promise.race([pushesUnderWay, pushing])
  one.child.kill('SIGKILL')
  await pushing
  stop = true
  t.ok(acknowledged.length > 0, `${acknowledged.length} pushes acknowledged before kill -9`)
  for (const id of acknowledged) {
    const r = await fetch(`${at(p2)}/api/env/imports/${id}`, { headers: { authorization: `Bearer ${pusher.accessToken}` } })
    if (r.status !== 200) {
      t.fail(`acknowledged push ${id} is missing (${r.status})`)
      return
    }
    await r.arrayBuffer()
  }
  t.pass('every acknowledged push is there, read through the surviving process')
  two.child.kill('SIGTERM')
  t.same([(await two.done).code, (await two.done).signal], [0, null])
})

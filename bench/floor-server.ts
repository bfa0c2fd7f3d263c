/**
 * The floor: the least work a durable read can do here, in its own process, to show what
 * issue 20's read ratio asks of this machine. Fastify 5 on the same paths as the bare server,
 * answering a GET only after the few steps no read of a secrets manager can skip:
 *
 * - the bearer token's SHA-256 looked up in a Map (a sign-in held in memory: no database);
 * - the answer's bytes opened from ONE AES-256-GCM ciphertext (the 30 values sealed together,
 *   as the real stack's snapshot is), with a key object made once;
 * - one access-log row appended and durable before the answer, group-committed as the real
 *   stack does it. On SQLite (`sqliteLog`): the rows asked for in one turn of the event loop
 *   (and, while a sync runs, every turn until it ends) in one transaction on one better-sqlite3
 *   connection (WAL, `synchronous = NORMAL`, the insert prepared once), each read answering
 *   only after an `fdatasync` of the WAL that started after its COMMIT, on libuv's thread pool
 *   (the real stack's commit-sync.ts, in a few lines). On PostgreSQL (`postgresLog`, when
 *   `BENCH_FLOOR_DB` is a URL): the rows of one turn in one prepared insert, no BEGIN or COMMIT.
 *
 * Nothing else: no rate limit, no hooks, no route rules, no error mapping, no vault or
 * environment lookup, and a log table with no foreign key, no autoincrement and no check.
 * `BENCH_FLOOR_SYNC=0` leaves out the disk sync as well (on PostgreSQL, `synchronous_commit =
 * off`): what the disk costs, never a durable read. Started by bench/run.ts with the bare
 * server's answers file; talks to it over IPC like the others.
 */
import { createCipheriv, createDecipheriv, createHash, createSecretKey, randomBytes } from 'node:crypto'
import { fdatasync, openSync, readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import Fastify from 'fastify'
import pg from 'pg'
import type { BareAnswer } from './bare-server.js'

const answersFile = process.env.BENCH_BARE_ANSWERS
const filename = process.env.BENCH_FLOOR_DB
const token = process.env.BENCH_FLOOR_TOKEN
if (!answersFile || !filename || !token || !process.send) throw new Error('bench/floor-server is started by bench/run.ts')
const withSync = process.env.BENCH_FLOOR_SYNC !== '0'

const onPostgres = /^postgres(ql)?:\/\//.test(filename)
const key = createSecretKey(randomBytes(32))
const seal = (plain: Buffer): Buffer => {
  const nonce = randomBytes(12)
  const c = createCipheriv('aes-256-gcm', key, nonce)
  const body = Buffer.concat([c.update(plain), c.final()])
  return Buffer.concat([nonce, body, c.getAuthTag()])
}
const open = (sealed: Buffer): Buffer => {
  const d = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12))
  d.setAuthTag(sealed.subarray(sealed.length - 16))
  const body = d.update(sealed.subarray(12, sealed.length - 16))
  d.final()
  return body
}

interface Held {
  readonly vault: string
  readonly environment: string
  readonly names: string
}
const answers = JSON.parse(readFileSync(answersFile, 'utf8')) as BareAnswer[]
const sealedByUrl = new Map<string, { sealed: Buffer; held: Held }>()
for (const a of answers) {
  if (a.method !== 'GET' || a.status !== 200) continue
  const parsed = JSON.parse(a.body) as { vault?: string; environment?: string; variables?: Record<string, string> }
  if (!parsed.variables) continue
  sealedByUrl.set(a.url, {
    sealed: seal(Buffer.from(a.body, 'utf8')),
    held: { vault: String(parsed.vault), environment: String(parsed.environment), names: JSON.stringify(Object.keys(parsed.variables)) },
  })
}
const sha256 = (s: string) => createHash('sha256').update(s).digest('base64url')
const signIns = new Map([[sha256(token), { id: 'sign-in', person: 'person', client: 'cli' }]])

const append = onPostgres ? await postgresLog(filename) : sqliteLog(filename)

const app = Fastify({ logger: false })
app.get('/api/env/:vault/:environment', async (request, reply) => {
  const header = request.headers.authorization
  const signIn = header?.startsWith('Bearer ') ? signIns.get(sha256(header.slice(7))) : undefined
  if (!signIn) return reply.code(401).send({ error: 'invalid_token' })
  const found = sealedByUrl.get(request.url)
  if (!found) return reply.code(404).send({ error: 'not_found' })
  const body = open(found.sealed)
  const { held } = found
  await append([held.vault, Date.now(), signIn.person, signIn.id, signIn.client, 'read', held.environment, held.names, request.ip])
  return reply.code(200).header('content-type', 'application/json; charset=utf-8').header('cache-control', 'no-store, private').send(body)
})
await app.listen({ host: '127.0.0.1', port: 0 })
const address = app.server.address()
process.on('message', (m: unknown) => {
  if (m === 'cpu') {
    const u = process.cpuUsage()
    process.send?.({ cpu: u.user + u.system })
  } else if (m === 'stop') void app.close().then(() => process.exit(0))
})
process.send({ ready: true, port: typeof address === 'object' && address ? address.port : 0 })

type Append = (args: readonly unknown[]) => Promise<void>

/**
 * SQLite: the rows of a turn (and, while a sync runs, of every turn until it ends) in one
 * transaction, then one `fdatasync` of the WAL on the thread pool; each answers after it.
 */
function sqliteLog(file: string): Append {
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.exec(`create table if not exists access_log (
    id integer primary key, vault_id text not null, at integer not null, person_id text, sign_in_id text,
    client_id text, action text not null, environment text, names text not null, address text)`)
  db.exec('create index if not exists access_log_by_vault on access_log (vault_id, id)')
  const insert = db.prepare(
    'insert into access_log (vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  )
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  insert.run('warm', Date.now(), null, null, null, 'read', null, '[]', null) // the WAL file exists from here on
  const wal = openSync(`${file}-wal`, 'r')
  interface Row {
    readonly args: readonly unknown[]
    readonly done: (err?: Error) => void
  }
  let queued: Row[] = []
  let turnScheduled = false
  let syncing = false
  const commitQueued = (): void => {
    const batch = queued
    queued = []
    if (batch.length === 0) return
    try {
      begin.run()
      for (const r of batch) insert.run(...r.args)
      commit.run()
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK')
      for (const r of batch) r.done(err as Error)
      return
    }
    if (!withSync) {
      for (const r of batch) r.done()
      return
    }
    syncing = true
    fdatasync(wal, (err) => {
      syncing = false
      for (const r of batch) r.done(err ?? undefined)
      commitQueued() // what was asked for meanwhile, in one transaction the next sync covers
    })
  }
  return (args) =>
    new Promise((resolve, reject) => {
      queued.push({ args, done: (err) => (err ? reject(err) : resolve()) })
      if (turnScheduled) return
      turnScheduled = true
      setImmediate(() => {
        turnScheduled = false
        if (!syncing) commitQueued()
      })
    })
}

/**
 * PostgreSQL: the rows of a turn in ONE insert statement (no BEGIN and COMMIT: one round trip,
 * committed and flushed by PostgreSQL before it answers), prepared once per row count, on a
 * pool of 10 as the real server's. `BENCH_FLOOR_SYNC=0`: `synchronous_commit = off`.
 */
async function postgresLog(url: string): Promise<Append> {
  const pool = new pg.Pool({ connectionString: url, max: 10, ...(withSync ? {} : { options: '-c synchronous_commit=off' }) })
  await pool.query(`create table if not exists bench_floor_log (
    id bigserial primary key, vault_id text not null, at bigint not null, person_id text, sign_in_id text,
    client_id text, action text not null, environment text, names text not null, address text)`)
  await pool.query('create index if not exists bench_floor_log_by_vault on bench_floor_log (vault_id, id)')
  const COLUMNS = 9
  const textOf = (rows: number) =>
    'insert into bench_floor_log (vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address) values ' +
    Array.from({ length: rows }, (_, r) => `(${Array.from({ length: COLUMNS }, (_, c) => `$${r * COLUMNS + c + 1}`).join(', ')})`).join(', ')
  let queued: { args: readonly unknown[]; resolve: () => void; reject: (err: unknown) => void }[] = []
  let turnScheduled = false
  const flush = (): void => {
    turnScheduled = false
    const batch = queued
    queued = []
    pool.query({ name: `bench_floor_${batch.length}`, text: textOf(batch.length), values: batch.flatMap((b) => b.args) }).then(
      () => {
        for (const b of batch) b.resolve()
      },
      (err: unknown) => {
        for (const b of batch) b.reject(err)
      },
    )
  }
  return (args) =>
    new Promise((resolve, reject) => {
      queued.push({ args, resolve, reject })
      if (turnScheduled) return
      turnScheduled = true
      setImmediate(flush)
    })
}

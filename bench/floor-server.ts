/**
 * The floor: the least work a durable read can do here, in its own process, to show what
 * issue 20's read ratio asks of this machine. Fastify 5 on the same paths as the bare server,
 * answering a GET only after the few steps no read of a secrets manager can skip:
 *
 * - the bearer token's SHA-256 looked up in a Map (a sign-in held in memory: no database);
 * - the answer's bytes opened from ONE AES-256-GCM ciphertext (the 30 values sealed together,
 *   as the real stack's snapshot is), with a key object made once;
 * - one access-log row appended and durable before the answer, group-committed as the real
 *   stack does it. On SQLite (`sqliteStore`): the rows asked for in one turn of the event loop
 *   (and, while a sync runs, every turn until it ends) in one transaction on one better-sqlite3
 *   connection (WAL, `synchronous = NORMAL`, the insert prepared once), each read answering
 *   only after an `fdatasync` of the WAL that started after its COMMIT, on libuv's thread pool
 *   (the real stack's own commit-sync.ts). On PostgreSQL (`postgresStore`, when
 *   `BENCH_FLOOR_DB` is a URL): the rows of one turn in one prepared insert, no BEGIN or COMMIT.
 *
 * And a push (`POST …/imports`, for `push-30-floor`): the body parsed as bare parses it, each value
 * sealed on its own by the real stack's `sealTexts` (AES-256-GCM, its own nonce, its place as
 * additional data), then in one transaction: the vault's row locked (PostgreSQL) and its
 * current names read (to say what is overwritten), the push, its sealed values and its log row
 * written, committed and synced before the 201 (PostgreSQL: BEGIN, the lock and the read in
 * one round trip; the rows in one statement and COMMIT in another).
 *
 * Nothing else: no rate limit, no hooks, no route rules, no error mapping, no vault or
 * environment lookup, and a log table with no foreign key, no autoincrement and no check.
 * `BENCH_FLOOR_SYNC=0` leaves out the disk sync as well (on PostgreSQL, `synchronous_commit =
 * off`): what the disk costs, never a durable read. Started by bench/run.ts with the bare
 * server's answers file; talks to it over IPC like the others.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { perTurn } from '@envkeep/storage-sql'
import Database from 'better-sqlite3'
import Fastify from 'fastify'
import pg from 'pg'
import { serveForBench } from './child.js'
import type { BareAnswer } from './bare-server.js'

const answersFile = process.env.BENCH_BARE_ANSWERS
const filename = process.env.BENCH_FLOOR_DB
const token = process.env.BENCH_FLOOR_TOKEN
if (!answersFile || !filename || !token || !process.send) throw new Error('bench/floor-server is started by bench/run.ts')
const withSync = process.env.BENCH_FLOOR_SYNC !== '0'

// The real stack's own sealing (crypto/seal.ts) and commit sync (commit-sync.ts), which their
// packages do not export: loaded from beside each package's entry point, so the floor's crypto and
// durability cost exactly what the real server's do.
type Sealing = typeof import('../packages/env-api-plugin/dist/crypto/seal.js')
type CommitSyncing = typeof import('../packages/storage-sqlite/dist/commit-sync.js')
const besides = (pkg: string, file: string) => new URL(file, import.meta.resolve(pkg)).href
const { open, placesIn, seal, sealTexts, snapshotPlaceOf } = (await import(besides('@envkeep/env-api-plugin', './crypto/seal.js'))) as Sealing
const { openCommitSync } = (await import(besides('@envkeep/storage-sqlite', './commit-sync.js'))) as CommitSyncing

const key = randomBytes(32)

/** One access-log row: vault, at, person, sign-in, client, action, environment, names (JSON), address. */
type LogRow = readonly unknown[]
interface Push {
  readonly id: string
  readonly vault: string
  readonly environment: string
  readonly names: readonly string[]
  readonly sealed: readonly Buffer[]
  readonly log: LogRow
}
interface Store {
  /** appends the row; resolves once it is durable */
  read(log: LogRow): Promise<void>
  /** stores the push; resolves with its overwrites once durable */
  push(p: Push): Promise<string[]>
}

const answers = JSON.parse(readFileSync(answersFile, 'utf8')) as BareAnswer[]
const reads = new Map<string, { sealed: Buffer; place: Buffer; vault: string; environment: string; names: string }>()
const pushes = new Map<string, { answer: Buffer; vault: string; environment: string; names: string[] }>()
for (const a of answers) {
  const parsed = JSON.parse(a.body) as { vault?: string; environment?: string; variables?: Record<string, string>; names?: string[] }
  if (a.method === 'GET' && a.status === 200 && parsed.variables) {
    const place = snapshotPlaceOf(String(parsed.vault), String(parsed.environment))
    reads.set(a.url, {
      sealed: seal(key, Buffer.from(a.body, 'utf8'), place),
      place,
      vault: String(parsed.vault),
      environment: String(parsed.environment),
      names: JSON.stringify(Object.keys(parsed.variables)),
    })
  }
  if (a.method === 'POST' && a.status === 201 && parsed.names)
    pushes.set(a.url, { answer: Buffer.from(a.body, 'utf8'), vault: String(parsed.vault), environment: String(parsed.environment), names: parsed.names })
}
const sha256 = (s: string) => createHash('sha256').update(s).digest('base64url')
const signIns = new Map([[sha256(token), { id: 'sign-in', person: 'person', client: 'cli' }]])
const LOG_COLUMNS = 'vault_id, at, person_id, sign_in_id, client_id, action, environment, names, address'
const TABLES = (bytes: string, serial: string) => [
  `create table if not exists bench_floor_log (id ${serial} primary key, vault_id text not null, at bigint not null, person_id text,
    sign_in_id text, client_id text, action text not null, environment text, names text not null, address text)`,
  'create index if not exists bench_floor_log_by_vault on bench_floor_log (vault_id, id)',
  'create table if not exists bench_floor_vaults (id text primary key)',
  `create table if not exists bench_floor_variables (vault_id text not null, environment text not null, name text not null,
    primary key (vault_id, environment, name))`,
  `create table if not exists bench_floor_pushes (id text primary key, vault_id text not null, environment text not null,
    names text not null, overwrites text not null, created_at bigint not null)`,
  `create table if not exists bench_floor_push_values (push_id text not null, name text not null, sealed ${bytes} not null,
    primary key (push_id, name))`,
]
const overwritesOf = (names: readonly string[], current: ReadonlySet<string>) => names.filter((n) => current.has(n))

// every value the push names exists already (the bench pushes into a vault that has them)
const existing = [...pushes.values()].flatMap((p) => p.names.map((name) => [p.vault, p.environment, name] as const))
const store = /^postgres(ql)?:\/\//.test(filename) ? await postgresStore(filename, existing) : sqliteStore(filename, existing)

const JSON_TYPE = 'application/json; charset=utf-8'
const app = Fastify({ logger: false, bodyLimit: 1_048_576 })
const signInOf = (authorization: string | undefined) => (authorization?.startsWith('Bearer ') ? signIns.get(sha256(authorization.slice(7))) : undefined)
app.get('/api/env/:vault/:environment', async (request, reply) => {
  const signIn = signInOf(request.headers.authorization)
  if (!signIn) return reply.code(401).send({ error: 'invalid_token' })
  const found = reads.get(request.url)
  if (!found) return reply.code(404).send({ error: 'not_found' })
  const body = open(key, found.sealed, found.place)
  await store.read([found.vault, Date.now(), signIn.person, signIn.id, signIn.client, 'read', found.environment, found.names, request.ip])
  return reply.code(200).header('content-type', JSON_TYPE).header('cache-control', 'no-store, private').send(body)
})
app.post('/api/env/:vault/:environment/imports', async (request, reply) => {
  const signIn = signInOf(request.headers.authorization)
  if (!signIn) return reply.code(401).send({ error: 'invalid_token' })
  const found = pushes.get(request.url)
  const variables = (request.body as { variables?: Record<string, string> } | null)?.variables
  if (!found || !variables) return reply.code(404).send({ error: 'not_found' })
  const names = Object.keys(variables).sort()
  const place = placesIn(found.vault, found.environment)
  const sealed = sealTexts(
    key,
    names.map((name) => variables[name] as string),
    names.map(place),
  )
  const id = randomUUID()
  const log = [found.vault, Date.now(), signIn.person, signIn.id, signIn.client, 'push_created', found.environment, JSON.stringify(names), request.ip]
  await store.push({ id, vault: found.vault, environment: found.environment, names, sealed, log })
  return reply.code(201).header('content-type', JSON_TYPE).header('cache-control', 'no-store, private').send(found.answer)
})
await serveForBench(app)

/**
 * SQLite: the operations asked for in one turn of the event loop (and, while a sync runs, in
 * every turn until it ends) in one transaction on one better-sqlite3 connection (WAL,
 * `synchronous = NORMAL`, statements prepared once); each settles only after an `fdatasync` of
 * the WAL that started after its COMMIT, on libuv's thread pool.
 */
function sqliteStore(file: string, seed: readonly (readonly [string, string, string])[]): Store {
  const db = new Database(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  for (const t of TABLES('blob', 'integer')) db.exec(t)
  const addVariable = db.prepare('insert or ignore into bench_floor_variables (vault_id, environment, name) values (?, ?, ?)')
  db.transaction(() => {
    for (const s of seed) addVariable.run(...s)
  })()
  const insertLog = db.prepare(`insert into bench_floor_log (${LOG_COLUMNS}) values (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
  const current = db.prepare('select name from bench_floor_variables where vault_id = ? and environment = ?').pluck()
  const insertPush = db.prepare('insert into bench_floor_pushes (id, vault_id, environment, names, overwrites, created_at) values (?, ?, ?, ?, ?, ?)')
  const insertValue = db.prepare('insert into bench_floor_push_values (push_id, name, sealed) values (?, ?, ?)')
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  insertLog.run('warm', Date.now(), null, null, null, 'read', null, '[]', null) // the WAL file exists from here on
  // the sync of the real runner's commits (commit-sync.ts): none without it
  const commits = withSync ? openCommitSync(`${file}-wal`) : undefined
  if (withSync && !commits) throw new Error('bench/floor-server: the WAL file could not be opened')
  interface Queued {
    readonly run: () => unknown
    readonly done: (err: unknown, value?: unknown) => void
  }
  const commitBatch = async (batch: Queued[]): Promise<void> => {
    const values: unknown[] = []
    try {
      begin.run()
      for (const q of batch) values.push(q.run())
      commit.run()
      await commits?.committed()
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK')
      for (const q of batch) q.done(err)
      return
    }
    for (const [i, q] of batch.entries()) q.done(undefined, values[i])
  }
  // one transaction a turn; while a sync runs, the turns' batches wait and commit together (as sql-runner.ts)
  const commitNow = (batch: Queued[]): void => void commitBatch(batch)
  const enqueueTurn = perTurn(commits ? commits.grouped(commitNow) : commitNow)
  const enqueue = <T>(run: () => T): Promise<T> =>
    new Promise((resolve, reject) => enqueueTurn({ run, done: (err, value) => (err ? reject(err) : resolve(value as T)) }))
  return {
    read: (log) => enqueue(() => void insertLog.run(...log)),
    push: (p) =>
      enqueue(() => {
        const overwrites = overwritesOf(p.names, new Set(current.all(p.vault, p.environment) as string[]))
        insertPush.run(p.id, p.vault, p.environment, JSON.stringify(p.names), JSON.stringify(overwrites), Date.now())
        for (const [i, name] of p.names.entries()) insertValue.run(p.id, name, p.sealed[i])
        insertLog.run(...p.log)
        return overwrites
      }),
  }
}

/**
 * PostgreSQL, on a pool of 10 pipelining clients as the real server's: a read's rows of one
 * turn in ONE prepared insert (no BEGIN and COMMIT: one round trip, flushed before PostgreSQL
 * answers); a push in one transaction of two round trips (BEGIN, the vault's lock and the
 * current names; then the push, its values and its log row in one statement, and COMMIT).
 * `BENCH_FLOOR_SYNC=0`: `synchronous_commit = off`.
 */
async function postgresStore(url: string, seed: readonly (readonly [string, string, string])[]): Promise<Store> {
  const pool = new pg.Pool({ connectionString: url, max: 10, pipeline: true, ...(withSync ? {} : { options: '-c synchronous_commit=off' }) } as pg.PoolConfig)
  for (const t of TABLES('bytea', 'bigserial')) await pool.query(t)
  for (const s of seed) {
    await pool.query('insert into bench_floor_vaults (id) values ($1) on conflict do nothing', [s[0]])
    await pool.query('insert into bench_floor_variables (vault_id, environment, name) values ($1, $2, $3) on conflict do nothing', [...s])
  }
  const params = (rows: number, columns: number, from = 1) =>
    Array.from({ length: rows }, (_, r) => `(${Array.from({ length: columns }, (_, c) => `$${from + r * columns + c}`).join(', ')})`).join(', ')
  const logInsert = (rows: number) => `insert into bench_floor_log (${LOG_COLUMNS}) values ${params(rows, 9)}`
  const appendTurn = perTurn((batch: { log: LogRow; resolve: () => void; reject: (err: unknown) => void }[]): void => {
    pool.query({ name: `bench_floor_log_${batch.length}`, text: logInsert(batch.length), values: batch.flatMap((b) => b.log) }).then(
      () => {
        for (const b of batch) b.resolve()
      },
      (err: unknown) => {
        for (const b of batch) b.reject(err)
      },
    )
  })
  // the push, its values and its log row: one statement ($1 id, $2 vault, $3 environment, $4 names, $5 overwrites, $6 at; then name and sealed per value; then the log row)
  const pushStatement = (
    values: number,
  ) => `with p as (insert into bench_floor_pushes (id, vault_id, environment, names, overwrites, created_at) values ($1, $2, $3, $4, $5, $6)),
    v as (insert into bench_floor_push_values (push_id, name, sealed) values ${Array.from({ length: values }, (_, i) => `($1, $${7 + 2 * i}, $${8 + 2 * i})`).join(', ')})
    insert into bench_floor_log (${LOG_COLUMNS}) values ${params(1, 9, 7 + 2 * values)}`
  return {
    read: (log) => new Promise((resolve, reject) => appendTurn({ log, resolve, reject })),
    async push(p) {
      const client = await pool.connect()
      try {
        const begin = client.query('begin')
        const lock = client.query({ name: 'bench_floor_lock', text: 'select id from bench_floor_vaults where id = $1 for update', values: [p.vault] })
        const current = client.query({
          name: 'bench_floor_current',
          text: 'select name from bench_floor_variables where vault_id = $1 and environment = $2',
          values: [p.vault, p.environment],
        })
        for (const q of [begin, lock, current]) q.catch(() => {}) // awaited below, in order
        await begin
        await lock
        const overwrites = overwritesOf(p.names, new Set((await current).rows.map((r: { name: string }) => r.name)))
        const write = client.query({
          name: `bench_floor_push_${p.names.length}`,
          text: pushStatement(p.names.length),
          values: [
            p.id,
            p.vault,
            p.environment,
            JSON.stringify(p.names),
            JSON.stringify(overwrites),
            Date.now(),
            ...p.names.flatMap((n, i) => [n, p.sealed[i]]),
            ...p.log,
          ],
        })
        const commit = client.query('commit')
        for (const q of [write, commit]) q.catch(() => {}) // awaited below; a failure of one fails the other too
        await write
        await commit
        return overwrites
      } catch (err) {
        await client.query('rollback').catch(() => {})
        throw err
      } finally {
        client.release()
      }
    },
  }
}

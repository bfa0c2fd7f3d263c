import t from 'tap'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { createSqliteAccountStore } from '../src/accounts/sqlite-account-store.js'
import { buildCli } from '../src/main.js'
import { Capture, freePort, runCli, tempDir } from './helpers.js'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'

t.test('start: the sweep expires pushes past their end; a shutdown signal closes and exits 0', async (t) => {
  const dir = tempDir(t)
  const env = { ENVKEEP_DATA_DIR: join(dir, 'data') }
  const envFixed = env
  t.equal((await runCli(['init'], envFixed, '', dir)).code, 0)
  t.equal(
    (await runCli(['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana', '--password-stdin'], envFixed, 'password-ana-1', dir)).code,
    0,
  )
  t.equal((await runCli(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'ana@example.com'], envFixed, '', dir)).code, 0)

  // a pending push that ended an hour ago, written straight to storage
  const storage = await createSqliteStorage({ filename: join(dir, 'data', 'envkeep.db') })
  const ana = (await (await createSqliteAccountStore(storage.database)).findAccountByEmail('ana@example.com'))!
  const vault = (await storage.findVaults({ name: 'shop' }))[0]!
  const now = new Date()
  const id = randomUUID()
  const created = await storage.createImport(
    {
      id,
      vaultId: vault.id,
      environment: 'development',
      senderId: ana.id,
      signInId: null,
      values: [{ name: 'A', sealed: new Uint8Array(40) }],
      refused: [],
      createdAt: new Date(now.getTime() - 7_200_000),
      expiresAt: new Date(now.getTime() - 3_600_000),
      limit: { maxVariables: 100, maxBytes: 1_000_000 },
    },
    testLogEntry({
      vaultId: vault.id,
      at: now,
      personId: ana.id,
      signInId: null,
      clientId: null,
      action: 'push_created',
      environment: 'development',
      names: ['A'],
      address: null,
    }),
  )
  t.equal(created.ok, true)
  await storage.close()

  let signal: ((s: string) => void) | null = null
  const stdout = new Capture()
  const stderr = new Capture()
  const port = await freePort()
  const running = buildCli({
    stdin: new PassThrough(),
    stdout,
    stderr,
    env: { ...env, ENVKEEP_PORT: String(port) },
    cwd: dir,
    onShutdownSignal: (h) => {
      signal = h
      return () => (signal = null)
    },
  }).run(['start'])
  for (let i = 0; i < 1000 && !/expired pending pushes/.test(stdout.text); i++) {
    if (/"level":50/.test(stdout.text)) break
    await new Promise((r) => setTimeout(r, 20))
  }
  t.match(stdout.text, /"expired":1/, 'the sweep expired the push')
  t.ok(signal, 'a shutdown handler is registered')
  signal!('SIGTERM')
  t.equal(await running, 0)
  t.match(stdout.text, /database closed/)
  t.equal(stderr.text.includes('/setup?token='), false, 'no setup link: an account exists')

  const after = await createSqliteStorage({ filename: join(dir, 'data', 'envkeep.db') })
  t.teardown(() => after.close())
  t.equal((await after.getImport(id, now))?.status, 'expired')
})

t.test('start: once "envkeep-server started" is logged, a shutdown signal is already handled (first run, setup link printed before it)', async (t) => {
  const dir = tempDir(t)
  let signal: ((s: string) => void) | null = null
  // whether the handler was there when the next queued task after the line ran: an await between
  // the line and the handler (the setup link's reads and writes) let a SIGTERM in that gap end the
  // process by default, unclosed
  let handledWhenStarted: boolean | undefined
  class Watched extends Capture {
    override _write(chunk: Buffer | string, enc: BufferEncoding, cb: (err?: Error | null) => void): void {
      if (String(chunk).includes('envkeep-server started')) queueMicrotask(() => (handledWhenStarted = signal !== null))
      super._write(chunk, enc, cb)
    }
  }
  const stdout = new Watched()
  const stderr = new Capture()
  const running = buildCli({
    stdin: new PassThrough(),
    stdout,
    stderr,
    env: { ENVKEEP_DATA_DIR: join(dir, 'data'), ENVKEEP_PORT: String(await freePort()) },
    cwd: dir,
    onShutdownSignal: (h) => {
      signal = h
      return () => (signal = null)
    },
  }).run(['start'])
  for (let i = 0; i < 1000 && handledWhenStarted === undefined; i++) {
    if (/"level":50/.test(stdout.text)) break
    await new Promise((r) => setTimeout(r, 20))
  }
  t.equal(handledWhenStarted, true, 'the shutdown handler is set in the same turn as the line')
  t.match(stderr.text, /\/setup\?token=/, 'the setup link was printed (a first run)')
  for (let i = 0; i < 1000 && !signal; i++) await new Promise((r) => setTimeout(r, 20))
  signal!('SIGTERM')
  t.equal(await running, 0)
  t.match(stdout.text, /database closed/)
})

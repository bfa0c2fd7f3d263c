import t, { type Test } from 'tap'
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import { join } from 'node:path'
import { auditSignature } from '../src/ops/audit-stream.js'
import { withTestDatabase } from '@envkeep/test-support'
import { freePort, runCli, tempDir } from './helpers.js'
import { newMasterKey, seed, startServer, stopServer } from './ops-helpers.js'

const SECRET = 'audit-stream-secret-for-tests-0123'

function makeCertificates(dir: string): { ca: string; key: string; cert: string } {
  const p = (n: string) => join(dir, n)
  const quiet = { stdio: 'ignore' as const }
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      p('ca.key'),
      '-out',
      p('ca.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=envkeep test CA',
    ],
    quiet,
  )
  execFileSync(
    'openssl',
    ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', p('sink.key'), '-out', p('sink.csr'), '-subj', '/CN=127.0.0.1'],
    quiet,
  )
  writeFileSync(p('ext'), 'subjectAltName=IP:127.0.0.1\n')
  execFileSync(
    'openssl',
    [
      'x509',
      '-req',
      '-in',
      p('sink.csr'),
      '-CA',
      p('ca.pem'),
      '-CAkey',
      p('ca.key'),
      '-CAcreateserial',
      '-out',
      p('sink.pem'),
      '-days',
      '1',
      '-extfile',
      p('ext'),
    ],
    quiet,
  )
  return { ca: p('ca.pem'), key: readFileSync(p('sink.key'), 'utf8'), cert: readFileSync(p('sink.pem'), 'utf8') }
}

interface Line {
  type: 'access' | 'server'
  id: number
  action: string
  names: string[]
}

/** An https endpoint that keeps every line it receives, checking each batch's signature. */
function createSink(tls: { key: string; cert: string }) {
  const lines: Line[] = []
  const bodies: string[] = []
  let badSignatures = 0
  let waiters: (() => void)[] = []
  let server: Server | null = null
  return {
    lines,
    bodies,
    badSignatures: () => badSignatures,
    async listen(port: number) {
      server = createServer(tls, (req, res) => {
        const chunks: Buffer[] = []
        req.on('data', (c: Buffer) => chunks.push(c))
        req.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8')
          const ts = String(req.headers['x-envkeep-timestamp'])
          if (req.headers['x-envkeep-signature'] !== auditSignature(SECRET, ts, body)) {
            badSignatures++
            res.writeHead(401).end()
            return
          }
          bodies.push(body)
          for (const l of body.split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Line)
          res.writeHead(204).end()
          for (const w of waiters) w()
          waiters = []
        })
      })
      await new Promise<void>((r) => server!.listen(port, '127.0.0.1', r))
    },
    async close() {
      await new Promise((r) => {
        server!.close(r)
        server!.closeAllConnections()
      })
    },
    /** resolves once at least `n` lines arrived */
    async until(n: number) {
      while (lines.length < n) await new Promise<void>((r) => waiters.push(r))
    },
  }
}

/** A sink with its own CA in `dir`, listening, closed at the end of the test. */
async function startSink(t: Test, dir: string) {
  const certs = makeCertificates(dir)
  const sinkPort = await freePort()
  const sink = createSink(certs)
  await sink.listen(sinkPort)
  t.teardown(() => sink.close().catch(() => {}))
  return { certs, sink, sinkPort }
}

async function exported(env: Record<string, string>): Promise<Line[]> {
  const r = await runCli(['admin', 'audit', 'export', '--since', '2000-01-01'], env)
  if (r.code !== 0) throw new Error(r.stderr)
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line)
}

t.test('https audit stream: every entry of a session arrives in order, signed, including after the sink was down and the server restarted', async (t) => {
  const dir = tempDir(t)
  const { certs, sink, sinkPort } = await startSink(t, dir)

  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const env = {
    ENVKEEP_DATA_DIR: join(dir, 'data'),
    ENVKEEP_PORT: String(port),
    ENVKEEP_MASTER_KEY: newMasterKey(),
    ENVKEEP_AUDIT_STREAM: `https://127.0.0.1:${sinkPort}/ingest`,
    ENVKEEP_AUDIT_STREAM_SECRET: SECRET,
    NODE_EXTRA_CA_CERTS: certs.ca,
  }
  const s = await seed(env, base)
  const read = () => fetch(`${base}/api/env/${s.vaultId}/development`, { headers: { authorization: `Bearer ${s.token}` } }).then((r) => r.status)
  const push = (name: string) =>
    fetch(`${base}/api/env/${s.vaultId}/development/imports`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ variables: { [name]: 'pushed-secret-value' } }),
    }).then((r) => r.status)

  let server = await startServer(t, env)
  for (let i = 0; i < 3; i++) t.equal(await read(), 200)
  t.equal(await push('FIRST_PUSH'), 201)
  const first = await exported(env)
  await sink.until(first.length)
  t.same(
    sink.lines.map((l) => l.id),
    first.map((l) => l.id),
    'everything so far, in order',
  )

  // the sink goes down; the session goes on; the server stops (what it could not send is kept)
  await sink.close()
  for (let i = 0; i < 2; i++) t.equal(await read(), 200)
  t.equal(await push('SECOND_PUSH'), 201)
  t.equal(await stopServer(server), 0)
  t.match(server.stdout(), /audit stream could not send; kept, will retry/)
  const all = await exported(env)
  t.ok(all.length >= first.length + 3)
  t.equal(sink.lines.length, first.length, 'nothing arrived while the sink was down')

  // back up, restarted: the rest arrives, once
  await sink.listen(sinkPort)
  server = await startServer(t, env)
  await sink.until(all.length)
  t.same(
    sink.lines.map((l) => `${l.type}:${l.id}`),
    all.map((l) => `${l.type}:${l.id}`),
    'every entry exactly once, in order',
  )
  t.same(
    sink.lines.filter((l) => l.action === 'push_created').flatMap((l) => l.names),
    ['FIRST_PUSH', 'SECOND_PUSH'],
    'names travel',
  )
  t.equal(sink.badSignatures(), 0)
  t.notOk(
    sink.bodies.some((b) => b.includes('pushed-secret-value') || b.includes('seeded-value') || b.includes(s.token)),
    'never a value or a token',
  )
  t.equal(await stopServer(server), 0)

  // the export of one vault, and a period that holds nothing
  const one = await runCli(['admin', 'audit', 'export', '--since', '7d', '--vault', 'app'], env)
  t.equal(one.code, 0)
  t.equal(one.stdout.split('\n').filter(Boolean).length, all.filter((l) => l.type === 'access').length)
  const none = await runCli(['admin', 'audit', 'export', '--since', '2000-01-01', '--until', '2000-01-02'], env)
  t.equal(none.stdout, '')
  t.equal((await runCli(['admin', 'audit', 'export', '--since', 'yesterday'], env)).code, 2)
})

t.test('file audit stream: JSON Lines appended, and a new file after logrotate moves it and sends SIGHUP', async (t) => {
  const dir = tempDir(t)
  const file = join(dir, 'log', 'audit.jsonl')
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const env = { ENVKEEP_DATA_DIR: join(dir, 'data'), ENVKEEP_PORT: String(port), ENVKEEP_MASTER_KEY: newMasterKey(), ENVKEEP_AUDIT_STREAM: file }
  const s = await seed(env, base)
  const server = await startServer(t, env)
  const count = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean).length : 0)
  const before = (await exported(env)).length
  // the stream writes every 2 seconds: wait for the file to hold what the log holds
  while (count(file) < before) await new Promise((r) => setTimeout(r, 100))
  renameSync(file, `${file}.1`)
  server.child.kill('SIGHUP')
  await server.waitFor('stdout', /SIGHUP: the audit stream file is opened again/)
  t.equal(await fetch(`${base}/api/env/${s.vaultId}/development`, { headers: { authorization: `Bearer ${s.token}` } }).then((r) => r.status), 200)
  while (count(file) < 1) await new Promise((r) => setTimeout(r, 100))
  const fresh = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line)
  t.same(
    fresh.map((l) => l.action),
    ['read'],
    'the new file starts with the entry after the move',
  )
  t.equal(count(`${file}.1`), before, 'the moved file kept the earlier ones')
  t.equal(await stopServer(server), 0, 'SIGHUP did not end the server')
})

t.test('two servers on one PostgreSQL database: each entry is sent once between them', async (t) => {
  const url = await withTestDatabase(t)
  if (!url) {
    t.comment('ENVKEEP_TEST_DATABASE_URL is not set: skipped')
    return
  }
  const dir = tempDir(t)
  const { certs, sink, sinkPort } = await startSink(t, dir)
  const publicBase = 'http://127.0.0.1:1'
  const common = {
    ENVKEEP_DATABASE_URL: url,
    ENVKEEP_MASTER_KEY: newMasterKey(),
    ENVKEEP_BASE_URL: publicBase,
    ENVKEEP_AUDIT_STREAM: `https://127.0.0.1:${sinkPort}/ingest`,
    ENVKEEP_AUDIT_STREAM_SECRET: SECRET,
    NODE_EXTRA_CA_CERTS: certs.ca,
  }
  const s = await seed({ ...common, ENVKEEP_DATA_DIR: join(dir, 'seed') }, publicBase)
  const ports = [await freePort(), await freePort()]
  const servers = []
  for (const [i, port] of ports.entries()) servers.push(await startServer(t, { ...common, ENVKEEP_DATA_DIR: join(dir, `d${i}`), ENVKEEP_PORT: String(port) }))
  // reads through both, interleaved and concurrent
  const reads = []
  for (let i = 0; i < 12; i++)
    reads.push(
      fetch(`http://127.0.0.1:${ports[i % 2]}/api/env/${s.vaultId}/development`, { headers: { authorization: `Bearer ${s.token}` } }).then((r) => r.status),
    )
  t.same(new Set(await Promise.all(reads)), new Set([200]))
  const all = await exported({ ...common, ENVKEEP_DATA_DIR: join(dir, 'seed') })
  await sink.until(all.length)
  for (const server of servers) t.equal(await stopServer(server), 0)
  const keys = sink.lines.map((l) => `${l.type}:${l.id}`)
  t.equal(new Set(keys).size, keys.length, 'no entry sent twice')
  t.same(keys.sort(), all.map((l) => `${l.type}:${l.id}`).sort(), 'every entry sent')
  const ids = sink.lines.filter((l) => l.type === 'access').map((l) => l.id)
  t.same(
    ids,
    [...ids].sort((a, b) => a - b),
    'in id order',
  )
})

import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync, gzipSync } from 'node:zlib'
import { sql } from 'kysely'
import { createPostgresStorage } from '@envkeep/storage-postgres'
import { createSqliteStorage } from '@envkeep/storage-sqlite'
import { withTestDatabase } from '@envkeep/test-support'
import { freePort, tempDir, runCli } from './helpers.js'
import { newMasterKey, OWNER_PASSWORD, seed, signInWithPassword, startServer, stopServer } from './ops-helpers.js'

async function read(base: string, token: string, vaultId: string, env = 'development') {
  const res = await fetch(`${base}/api/env/${vaultId}/${env}`, { headers: { authorization: `Bearer ${token}` } })
  return { status: res.status, body: (await res.json()) as { variables?: Record<string, string> } }
}

/**
 * Starts a server on a restored database (its public base URL the original's, as after a move)
 * and checks that the old sign-in reads the value and the password signs in.
 */
async function checkRestored(t: Test, env: Record<string, string>, token: string, vaultId: string) {
  const port = await freePort()
  const at = `http://127.0.0.1:${port}`
  const server = await startServer(t, { ...env, ENVKEEP_PORT: String(port) })
  const r = await read(at, token, vaultId)
  t.equal(r.status, 200, 'the old sign-in works on the restored data')
  t.equal(r.body.variables?.SEEDED_NAME, 'seeded-value', 'the value opens')
  t.equal(await signInWithPassword(at, env.ENVKEEP_BASE_URL!, OWNER_PASSWORD), 303, 'the password signs in')
  t.equal(await stopServer(server), 0)
}

/**
 * The staged usage (issue 20, the storage limit's count of what pending pushes hold) of a
 * restored database: rebuilt from the restored pushes, so it equals their recount, which is
 * not nothing (the backup holds pending pushes).
 */
async function checkStagedUsage(t: Test, target: { filename: string } | { url: string }) {
  const RECOUNT = `select
    (select coalesce(sum(values_count), 0) from staged_usage) as kept_n, (select coalesce(sum(bytes), 0) from staged_usage) as kept_bytes,
    (select count(*) from import_values iv join imports i on i.id = iv.import_id where i.status = 'pending') as n,
    (select coalesce(sum(length(iv.sealed)), 0) from import_values iv join imports i on i.id = iv.import_id where i.status = 'pending') as bytes`
  let row: Record<string, unknown>
  if ('filename' in target) {
    const s = await createSqliteStorage({ filename: target.filename })
    row = s.database.sqlite.prepare(RECOUNT).get() as Record<string, unknown>
    await s.close()
  } else {
    const s = await createPostgresStorage({ connectionString: target.url, pool: 1 })
    row = (await sql.raw(RECOUNT).execute(s.database.db)).rows[0] as Record<string, unknown>
    await s.close()
  }
  const [keptN, keptBytes, n, bytes] = [row.kept_n, row.kept_bytes, row.n, row.bytes].map(Number)
  t.ok(n! > 0, 'the restored data holds pending pushes')
  t.same({ n: keptN, bytes: keptBytes }, { n, bytes }, 'the staged usage is made again from the restored pushes')
}

t.test('a backup taken during a stream of pushes restores into SQLite and PostgreSQL and back; damage and tampering are refused', async (t) => {
  const dir = tempDir(t)
  const data = join(dir, 'data')
  const port = await freePort()
  // a fixed base URL for every server of this test: sign-ins are bound to it
  const base = `http://127.0.0.1:${port}`
  const key = newMasterKey()
  const env = { ENVKEEP_DATA_DIR: data, ENVKEEP_PORT: String(port), ENVKEEP_MASTER_KEY: key }
  const s = await seed(env, base)
  const server = await startServer(t, env)

  // a stream of pushes while the backup runs
  let pushing = true
  let pushed = 0
  const stream = (async () => {
    while (pushing) {
      const res = await fetch(`${base}/api/env/${s.vaultId}/development/imports`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ variables: { [`PUSH_${pushed}`]: `push-value-${pushed}` } }),
      })
      if (res.status !== 201) throw new Error(`push answered ${res.status}`)
      pushed++
    }
  })()
  const file = join(dir, 'envkeep.backup')
  while (pushed < 3) await new Promise((r) => setTimeout(r, 20))
  const b = await runCli(['admin', 'backup', '--to', file], env)
  const atEnd = pushed
  while (pushed < atEnd + 3) await new Promise((r) => setTimeout(r, 20))
  pushing = false
  await stream
  t.equal(b.code, 0, b.stderr)
  t.match(b.stdout, /backup written: .*\n {2}vaults 1, variables 1, imports \d+/)
  t.equal(statSync(file).mode & 0o777, 0o600)
  t.notOk(existsSync(`${file}.partial`))
  const raw = gunzipSync(readFileSync(file)).toString('utf8')
  t.notMatch(raw, /seeded-value|push-value-/, 'values are still sealed in the file')
  t.notMatch(raw, new RegExp(key), 'the master key is not in it')
  t.notMatch(raw, new RegExp(s.token), 'no token, only hashes')
  t.equal((await runCli(['admin', 'backup', '--to', file], env)).code, 1, 'never overwrites')
  t.equal(await stopServer(server), 0)

  const v = await runCli(['admin', 'backup', 'verify', file], env)
  t.equal(v.code, 0, v.stderr)
  t.match(v.stdout, /intact/)
  t.match(v.stdout, /signature: matches/)
  t.match(v.stdout, /every sealed value opened: 1 variables, \d+ values of pushes, 1 history values/)
  const manifest = JSON.parse((await runCli(['admin', 'backup', 'verify', file, '--json'], env)).stdout) as {
    manifest: { counts: Record<string, number>; keyId: string }
  }
  t.ok(
    manifest.manifest.counts.imports! >= 3 && manifest.manifest.counts.imports! < pushed,
    `the snapshot holds ${manifest.manifest.counts.imports} of ${pushed} pushes`,
  )
  t.equal(manifest.manifest.counts.import_values, manifest.manifest.counts.imports, 'each push with its value: one snapshot')
  const noKey = await runCli(['admin', 'backup', 'verify', file, '--data-dir', join(dir, 'nowhere')], {})
  t.equal(noKey.code, 0)
  t.match(noKey.stdout, /values not opened/)
  const otherKey = join(dir, 'other.key')
  writeFileSync(otherKey, newMasterKey(), { mode: 0o600 })
  const wrong = await runCli(['admin', 'backup', 'verify', file, '--key-file', otherKey], {})
  t.equal(wrong.code, 1)
  t.match(wrong.stderr, /not the one of this backup/)

  // into a new SQLite directory
  const sqliteDir = join(dir, 'restored-sqlite')
  const r1 = await runCli(['admin', 'backup', 'restore', file, '--data-dir', sqliteDir], { ENVKEEP_MASTER_KEY: key })
  t.equal(r1.code, 0, r1.stderr)
  t.match(r1.stdout, /every sealed value opened/)
  await checkRestored(t, { ENVKEEP_DATA_DIR: sqliteDir, ENVKEEP_MASTER_KEY: key, ENVKEEP_BASE_URL: base }, s.token, s.vaultId)
  await checkStagedUsage(t, { filename: join(sqliteDir, 'envkeep.db') })
  const again = await runCli(['admin', 'backup', 'restore', file, '--data-dir', sqliteDir], { ENVKEEP_MASTER_KEY: key })
  t.equal(again.code, 1)
  t.match(again.stderr, /not empty/)

  const pgUrl = await withTestDatabase(t)
  if (pgUrl) {
    const r2 = await runCli(['admin', 'backup', 'restore', file, '--database-url', pgUrl], { ENVKEEP_MASTER_KEY: key })
    t.equal(r2.code, 0, r2.stderr)
    t.match(r2.stdout, /every sealed value opened/)
    const pgEnv = { ENVKEEP_DATA_DIR: join(dir, 'pg-side'), ENVKEEP_DATABASE_URL: pgUrl, ENVKEEP_MASTER_KEY: key, ENVKEEP_BASE_URL: base }
    await checkRestored(t, pgEnv, s.token, s.vaultId)
    await checkStagedUsage(t, { url: pgUrl })
    t.equal(
      (await runCli(['admin', 'backup', 'restore', file, '--database-url', pgUrl], { ENVKEEP_MASTER_KEY: key })).code,
      1,
      'a database with data is refused',
    )
    // and back: PostgreSQL → backup → SQLite
    const file2 = join(dir, 'from-postgres.backup')
    const b2 = await runCli(['admin', 'backup', '--to', file2], pgEnv)
    t.equal(b2.code, 0, b2.stderr)
    const back = join(dir, 'back-to-sqlite')
    const r3 = await runCli(['admin', 'backup', 'restore', file2, '--data-dir', back], { ENVKEEP_MASTER_KEY: key })
    t.equal(r3.code, 0, r3.stderr)
    await checkRestored(t, { ENVKEEP_DATA_DIR: back, ENVKEEP_MASTER_KEY: key, ENVKEEP_BASE_URL: base }, s.token, s.vaultId)
  } else t.comment('ENVKEEP_TEST_DATABASE_URL is not set: the PostgreSQL restores were not run')

  // damage and tampering
  const bytes = readFileSync(file)
  const truncated = join(dir, 'truncated.backup')
  writeFileSync(truncated, bytes.subarray(0, bytes.length - 200))
  const lines = raw.split('\n')
  const cut = join(dir, 'cut.backup')
  writeFileSync(cut, gzipSync(`${lines.slice(0, -3).join('\n')}\n`))
  const changed = join(dir, 'changed.backup')
  writeFileSync(changed, gzipSync(raw.replace('"app"', '"ppa"')))
  // a forger who recomputes the SHA-256 but has no key
  const body = raw.slice(0, raw.lastIndexOf('{"end"'))
  const trailer = JSON.parse(raw.slice(raw.lastIndexOf('{"end"'))) as { sha256: string }
  const forgedBody = body.replace('"app"', '"ppa"')
  trailer.sha256 = createHash('sha256').update(forgedBody).digest('hex')
  const forged = join(dir, 'forged.backup')
  writeFileSync(forged, gzipSync(`${forgedBody}${JSON.stringify(trailer)}\n`))
  const cases: [string, RegExp][] = [
    [truncated, /truncated or damaged/],
    [cut, /truncated: its end/],
    [changed, /does not match its SHA-256/],
    [forged, /does not match its signature/],
  ]
  for (const [f, why] of cases) {
    const vr = await runCli(['admin', 'backup', 'verify', f], env)
    t.equal(vr.code, 1, `verify refuses ${f}`)
    t.match(vr.stderr, why)
    const target = join(dir, `restore-of-${f.split('/').pop()}`)
    const rr = await runCli(['admin', 'backup', 'restore', f, '--data-dir', target], { ENVKEEP_MASTER_KEY: key })
    t.equal(rr.code, 1, `restore refuses ${f}`)
    t.match(rr.stderr, why)
    t.notOk(existsSync(target), 'nothing written')
  }
})

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { createPerson, formsOf, runBin, startRealServer } from './helpers/real-server.js'

// Issue 24, item 3: `envkeep run --watch` restarts a real child process after a value is changed
// on the page, and not when nothing it gets changed; the checks are conditional reads (304).

t.setTimeout(300_000)

const PASSWORD = 'canary-watch-password'

t.test('run --watch restarts the command when its values change, and only then', async (t) => {
  const server = await startRealServer(t)
  const { baseUrl } = server
  const home = mkdtempSync(join(tmpdir(), 'envkeep-watch-'))
  t.teardown(() => rmSync(home, { recursive: true, force: true }))
  const project = join(home, 'project')
  mkdirSync(project, { recursive: true })
  const env = { ENVKEEP_CONFIG_DIR: join(home, 'config'), NO_COLOR: '1', ENVKEEP_FALLBACK_KEYRING: '0' }

  t.equal((await server.admin(['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana', '--password-stdin'], PASSWORD)).code, 0)
  const created = await server.admin(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'ana@example.com', '--json'])
  const vaultId = (JSON.parse(created.stdout.trim().split('\n').pop()!) as { vault: { id: string } }).vault.id
  t.equal((await server.admin(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'PORT'], '8080')).code, 0)
  t.equal((await server.admin(['admin', 'var', 'set', '--vault', 'shop', '--env', 'preview', 'OTHER'], 'a')).code, 0)
  const person = createPerson(baseUrl, 'ana@example.com', PASSWORD)
  const login = runBin(['login', '--no-browser', '--base-url', baseUrl], env)
  const [, link] = await login.waitFor('stderr', /\n\s+(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)\n/)
  await person.consent(link!, { push: false })
  t.equal((await login.done).code, 0)
  t.equal((await runBin(['link', 'shop', 'development'], env, project).done).code, 0)

  const usage = await runBin(['run', '--watch', '--interval', '2', '--', 'true'], env, project).done
  t.equal(usage.code, 2, 'an interval under 10 s is refused')

  // a real child: says which PORT it got, ends on SIGTERM saying so
  const child = join(home, 'child.mjs')
  writeFileSync(
    child,
    `process.stdout.write('started ' + process.env.PORT + '\\n')
process.on('SIGTERM', () => { process.stdout.write('stopping ' + process.env.PORT + '\\n'); process.exit(0) })
setInterval(() => {}, 1000)
`,
  )
  const watched = runBin(['run', '--watch', '--no-mask', '--', process.execPath, child], env, project)
  t.teardown(() => void watched.child.kill('SIGKILL'))
  await watched.waitFor('stdout', /started 8080\n/)
  await watched.waitFor('stderr', /watching development every 10 s/)

  const reads = async () => {
    const page = await person.get(`/v/${vaultId}/access-log?action=read`)
    return (page.body.match(/<span class="action">read<\/span>/g) ?? []).length
  }
  const untilReads = async (n: number) => {
    // each check is logged as a read, a 304 included: wait for the server to have seen it
    while ((await reads()) < n) await new Promise<void>((resolve) => setImmediate(resolve))
  }
  t.equal(await reads(), 1, 'the first read')
  await untilReads(2) // one check: nothing changed (304)
  // a change elsewhere in the vault makes the next check a full read: same values, no restart
  t.equal((await server.admin(['admin', 'var', 'set', '--vault', 'shop', '--env', 'preview', 'OTHER'], 'b')).code, 0)
  await untilReads(3)
  t.equal(watched.stdout().match(/started/g)?.length, 1, 'not restarted while nothing it gets changed')
  t.notMatch(watched.stderr(), /restarting/)

  // changed on the page: restarted with the new value, a line naming PORT (never a value)
  const page = await person.get(`/v/${vaultId}?env=development`)
  const change = formsOf(page.body).find((f) => f.action.includes('/variables/change') && f.fields.name === 'PORT')!
  t.equal((await person.post(change.action, { ...change.fields, value: '9090' })).res.status, 303)
  await watched.waitFor('stderr', /envkeep: PORT changed in development; restarting the command \(SIGTERM\)\n/)
  await watched.waitFor('stdout', /started 9090\n/)
  t.match(watched.stdout(), /started 8080\nstopping 8080\nstarted 9090\n/)
  t.notMatch(watched.stderr(), /8080|9090/, 'no value on stderr')

  // the server goes away: the check fails, the command keeps running, said once
  await server.stop()
  await watched.waitFor('stderr', /envkeep: could not check development for changes \(.*\); the command keeps running, checks go on\n/)
  t.notMatch(watched.stdout(), /stopping 9090/, 'still running')
  t.equal(watched.child.exitCode, null)

  // envkeep's own SIGTERM reaches the command; its exit passes through
  watched.child.kill('SIGTERM')
  const end = await watched.done
  t.match(watched.stdout(), /stopping 9090\n/)
  t.equal(end.code, 0)
})

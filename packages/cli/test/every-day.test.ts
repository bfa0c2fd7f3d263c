import { execFile, execFileSync } from 'node:child_process'
import { promisify } from 'node:util'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { Masker } from '../src/mask.js'
import { CLI_BIN, createPerson, runBin, startRealServer } from './helpers/real-server.js'
import { runCli } from './helpers/run-cli.js'

// Issue 15: the CLI for every day, through the built binary against the real server.

t.setTimeout(300_000)

const PASSWORD = 'canary-everyday-password'
const SECRET = 'canary-secret-ünïcødé-4242'
const DB_URL = 'postgres://app:canary-db-pass@db/shop'

t.test('masking: every value of 6+ characters, split at every byte, multi-byte included', async (t) => {
  const secrets = [SECRET, 'abcdef', 'short']
  const text = Buffer.from(`start ${SECRET} middle abcdefabcdef end short ${SECRET.slice(0, 8)} x`, 'utf8')
  const expected = `start ***** middle ********** end short ${SECRET.slice(0, 8)} x`
  const masker6 = secrets.filter((s) => s.length >= 6)
  for (let cut = 0; cut <= text.length; cut++) {
    const m = new Masker(masker6)
    const out = Buffer.concat([m.push(text.subarray(0, cut)), m.push(text.subarray(cut)), m.end()]).toString('utf8')
    if (out !== expected) {
      t.equal(out, expected, `split at byte ${cut}`)
      return
    }
  }
  t.pass('masked at every split point')
  // byte by byte
  const m = new Masker(masker6)
  const parts = [...text].map((b) => m.push(Buffer.from([b])))
  t.equal(Buffer.concat([...parts, m.end()]).toString('utf8'), expected)
  // ordinary output is not held back
  const plain = new Masker(masker6)
  t.equal(plain.push(Buffer.from('hello world\n')).toString(), 'hello world\n')
  t.equal(plain.push(Buffer.from('ready: canary-sec')).toString(), 'ready: ', 'only a tail that could start a value waits')
})

t.test('every day, in a linked folder', async (t) => {
  const server = await startRealServer(t)
  const { baseUrl } = server
  const home = mkdtempSync(join(tmpdir(), 'envkeep-everyday-'))
  t.teardown(() => rmSync(home, { recursive: true, force: true }))
  const configDir = join(home, 'config')
  const project = join(home, 'project')
  const sub = join(project, 'src', 'deep')
  mkdirSync(sub, { recursive: true })
  const env = { ENVKEEP_CONFIG_DIR: configDir, NO_COLOR: '1', ENVKEEP_FALLBACK_KEYRING: '0' }
  const bin = async (args: string[], cwd = project, extra: Record<string, string> = {}) => runBin(args, { ...env, ...extra }, cwd).done

  t.equal((await server.admin(['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana', '--password-stdin'], PASSWORD)).code, 0)
  t.equal((await server.admin(['admin', 'user', 'create', '--email', 'bob@example.com', '--name', 'Bob', '--password-stdin'], PASSWORD)).code, 0)
  const created = await server.admin(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'ana@example.com', '--json'])
  const vaultId = (JSON.parse(created.stdout.trim().split('\n').pop()!) as { vault: { id: string } }).vault.id
  for (const [n, v] of Object.entries({ SECRET, DB_URL, PORT: '8080' })) {
    t.equal((await server.admin(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', n], v)).code, 0)
  }
  const person = createPerson(baseUrl, 'ana@example.com', PASSWORD)
  const login = runBin(['login', '--push', '--no-browser', '--base-url', baseUrl], env)
  const [, link] = await login.waitFor('stderr', /\n\s+(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)\n/)
  await person.consent(link!, { push: true })
  t.equal((await login.done).code, 0)

  await t.test('link writes .envkeep.json with no secret; commands below it use it', async (t) => {
    const r = await bin(['link', 'shop', 'development', '--json'])
    t.equal(r.code, 0, r.stderr)
    const file = JSON.parse(readFileSync(join(project, '.envkeep.json'), 'utf8'))
    t.same(file, { baseUrl, vault: { id: vaultId, name: 'shop' }, environment: 'development' })
    t.notMatch(readFileSync(join(project, '.envkeep.json'), 'utf8'), /ekat_|ekrt_|canary/)
    const pulled = await bin(['pull', '--verbose', '--json'], sub)
    t.equal(pulled.code, 0, pulled.stderr)
    t.same(JSON.parse(pulled.stdout), { DB_URL, PORT: '8080', SECRET })
    t.match(pulled.stderr, `using ${join(project, '.envkeep.json')}`)
    const wrong = await bin(['link', 'shop', 'developmnt'])
    t.equal(wrong.code, 1)
    t.match(wrong.stderr, /no environment "developmnt" that you may read; did you mean "development"\?/)
    t.match(wrong.stderr, /environments you may read: development, preview, production/)
    const typo = await bin(['pull', 'shp', 'development'])
    t.match(typo.stderr, /no vault named "shp".*did you mean "shop"\?/)
  })

  await t.test('whoami, envs, get', async (t) => {
    const who = await bin(['whoami', '--json'])
    t.equal(who.code, 0, who.stderr)
    const w = JSON.parse(who.stdout)
    t.equal(w.server, baseUrl)
    t.equal(w.can_push, true)
    t.same(w.vaults, [{ id: vaultId, name: 'shop', role: 'owner' }])
    t.match((await bin(['whoami'])).stdout, /may push:\s+yes/)
    t.equal((await bin(['envs'])).stdout, 'development\npreview\nproduction\n')
    const got = await bin(['get', 'DB_URL'], sub)
    t.equal(got.stdout, DB_URL, 'raw, nothing added')
    // (async: the server runs in this process)
    const sh = await promisify(execFile)('sh', ['-c', `X=$("${process.execPath}" ${CLI_BIN} get SECRET); printf %s "$X"`], {
      cwd: project,
      env: { ...process.env, ...env },
      encoding: 'utf8',
    })
    t.equal(sh.stdout, SECRET)
    const missing = await bin(['get', 'DB_UR'])
    t.equal(missing.code, 1)
    t.match(missing.stderr, /development has no variable DB_UR; did you mean "DB_URL"\?/)
    t.notMatch(missing.stderr, new RegExp(`${DB_URL}|canary-secret`), 'no value in the error')
  })

  await t.test('diff: names only unless asked; exit 0 equal, 1 different', async (t) => {
    writeFileSync(join(project, '.env'), `DB_URL=${DB_URL}\nPORT=8080\nSECRET=${SECRET}\n`)
    const same = await bin(['diff'])
    t.equal(same.code, 0, same.stderr)
    writeFileSync(join(project, '.env'), `DB_URL=${DB_URL}\nPORT=9090\nNEW_ONE=canary-new-value\n`)
    const d = await bin(['diff'])
    t.equal(d.code, 1)
    t.equal(d.stdout, '+ NEW_ONE\n~ PORT\n- SECRET\n')
    t.notMatch(d.stdout + d.stderr, /canary|9090/, 'values hidden')
    const j = await bin(['diff', '--json'])
    t.same(JSON.parse(j.stdout), { equal: false, added: ['NEW_ONE'], changed: ['PORT'], removed: ['SECRET'] })
    const shown = await bin(['diff', '--show-values'])
    t.match(shown.stdout, /~ PORT: "8080" -> "9090"/)
  })

  await t.test('set sends a one-variable push; status prints the review link; open --print', async (t) => {
    // the value on standard input, as in: envkeep set PORT < file
    let out: { code: number | null; stdout: string; stderr: string }
    try {
      const r = await promisify(execFile)('sh', ['-c', `printf '9191\\n' | "${process.execPath}" ${CLI_BIN} set PORT`], {
        cwd: project,
        env: { ...process.env, ...env },
        encoding: 'utf8',
      })
      out = { code: 0, stdout: r.stdout, stderr: r.stderr }
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string }
      out = { code: e.code, stdout: e.stdout, stderr: e.stderr }
    }
    t.equal(out.code, 0, out.stderr)
    const review = /Review and apply it at: (\S+)/.exec(out.stdout)![1]!
    const id = /Push id: (\S+)/.exec(out.stdout)![1]!
    t.equal(review, `${baseUrl}/v/${vaultId}/variables/imports/${id}`)
    const status = await bin(['status', id])
    t.match(status.stdout, `review page: ${review}`)
    t.equal((await bin(['status', id, '--json'])).stdout.includes(`"url": "${review}"`), true)
    t.equal((await bin(['open', id, '--print'])).stdout, `${review}\n`)
    t.equal((await bin(['open', '--print'], sub)).stdout, `${baseUrl}/v/${vaultId}\n`)
    await person.decide(review, 'apply')
    t.equal((await bin(['get', 'PORT'])).stdout, '9191', 'the value arrived exactly, final newline removed')
  })

  await t.test('run --mask hides values in the output, across writes and multi-byte characters; --only; --no-override', async (t) => {
    const script = `const v = process.env.SECRET; const b = Buffer.from(v); process.stdout.write(b.subarray(0, 9)); setTimeout(() => { process.stdout.write(b.subarray(9)); process.stdout.write(' and ' + process.env.DB_URL + ' port ' + process.env.PORT + '\\n'); console.error('err: ' + v) }, 150)`
    const masked = await bin(['run', '--mask', '--', process.execPath, '-e', script])
    t.equal(masked.code, 0, masked.stderr)
    t.equal(masked.stdout, '***** and ***** port 9191\n', 'short values stay, long ones are masked')
    t.match(masked.stderr, /err: \*\*\*\*\*/)
    t.notMatch(masked.stdout + masked.stderr, /canary/)
    const inCi = await bin(['run', '--', process.execPath, '-e', 'console.log(process.env.SECRET)'], project, { CI: 'true' })
    t.equal(inCi.stdout, '*****\n', 'on by default when CI=true')
    const plain = await bin(['run', '--', process.execPath, '-e', 'console.log(process.env.SECRET)'])
    t.equal(plain.stdout, `${SECRET}\n`, 'off otherwise')
    const only = await bin([
      'run',
      '--only',
      'PORT',
      '--',
      process.execPath,
      '-e',
      'console.log(JSON.stringify([process.env.PORT, process.env.SECRET ?? null]))',
    ])
    t.equal(only.stdout, '["9191",null]\n')
    const keep = await bin(['run', '--no-override', '--', process.execPath, '-e', 'console.log(process.env.PORT)'], project, { PORT: '1234' })
    t.equal(keep.stdout, '1234\n')
  })

  await t.test('offline fallback: used only when the server cannot be reached; encrypted; not after 403', async (t) => {
    const saved = await bin(['pull', '--fallback', '--json'])
    t.equal(saved.code, 0, saved.stderr)
    const dir = join(configDir, 'fallback')
    const files = readdirSync(dir)
    t.ok(files.length >= 1, 'a copy was saved')
    for (const f of files) t.notMatch(readFileSync(join(dir, f), 'utf8'), /canary|9191/, 'the copy is encrypted')
    // a 403 is an answer: the copy is not used
    t.equal((await server.admin(['admin', 'member', 'add', '--vault', 'shop', '--email', 'bob@example.com', '--role', 'owner'])).code, 0)
    t.equal((await server.admin(['admin', 'member', 'add', '--vault', 'shop', '--email', 'ana@example.com', '--role', 'viewer'])).code, 0)
    const refused = await bin(['pull', '--fallback'])
    t.equal(refused.code, 1)
    t.match(refused.stderr, /HTTP 403/)
    t.notMatch(refused.stdout, /canary/)
    t.equal((await server.admin(['admin', 'member', 'add', '--vault', 'shop', '--email', 'ana@example.com', '--role', 'owner'])).code, 0)
    // the server stops: the copy, with a warning naming its age
    await server.stop()
    const offline = await bin(['run', '--fallback', '--', process.execPath, '-e', 'console.log(process.env.PORT)'])
    t.equal(offline.code, 0, offline.stderr)
    t.equal(offline.stdout, '9191\n')
    t.match(offline.stderr, /warning: 127\.0\.0\.1:\d+ cannot be reached; using the offline copy of development saved \S+ \(\d+ min old\)/)
    const without = await bin(['pull'])
    t.equal(without.code, 1, 'off unless asked')
    // the same CLI in-process, its clock two seconds ahead: the copy is older than the 1 s allowed (no sleep)
    const later = new Date(Date.now() + 2_000)
    const tooOld = await runCli(['pull', '--fallback', '--fallback-max-age', '1s'], {
      env: { ...process.env, ...env },
      cwd: project,
      now: () => later,
    })
    t.equal(tooOld.code, 1)
    t.match(tooOld.stderr, /offline copy is 1 min old, older than the 1 min allowed/)
    // logout forgets the sign-in and deletes the copies (the revocation itself fails: the server is down)
    const out = await bin(['logout'])
    t.equal(out.code, 1)
    t.equal(readdirSync(dir).length, 0, 'copies deleted')
    const again = await bin(['logout'])
    t.equal(again.code, 0)
    t.match(again.stderr, /Not signed in/)
    t.equal((await bin(['unlink'])).code, 0)
    t.notOk(existsSync(join(project, '.envkeep.json')))
  })
})

t.test('completion scripts load in a real bash and complete commands and options', async (t) => {
  const out = execFileSync(
    'bash',
    [
      '-c',
      `source <("${process.execPath}" ${CLI_BIN} completion bash) && complete -p envkeep && COMP_WORDS=(envkeep pu) COMP_CWORD=1 && _envkeep && echo "\${COMPREPLY[@]}" && COMP_WORDS=(envkeep pull --fo) COMP_CWORD=2 && _envkeep && echo "\${COMPREPLY[@]}"`,
    ],
    { encoding: 'utf8' },
  )
  t.equal(out, 'complete -F _envkeep envkeep\npull push\n--format\n')
  for (const shell of ['zsh', 'fish']) {
    const r = await runBin(['completion', shell], {}).done
    t.equal(r.code, 0)
    t.match(r.stdout, /whoami/)
  }
})

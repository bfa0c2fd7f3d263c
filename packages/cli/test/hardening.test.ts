import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import t from 'tap'
import { runCli } from './helpers/run-cli.js'
import { createPerson, runBin, startRealServer } from './helpers/real-server.js'

// Issue 25, the command-line side: what an attacker and outside tests found, each through the
// built binary (or the CLI in-process where a terminal is needed) against the real server.

t.setTimeout(300_000)

const PASSWORD = 'canary-hardening-password'
const PEM = '-----BEGIN KEY-----\ncanary-pem-line-one-AAAA\ncanary-pem-line-two-BBBB\n-----END KEY-----'
// OSC 52 (set the clipboard), a window title, clear screen: a value must not drive the terminal
const HOSTILE = 'x\u001b]52;c;Y2FuYXJ5\u0007\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202eend'

t.test('the CLI against a vault an editor may fill', async (t) => {
  const server = await startRealServer(t)
  const { baseUrl } = server
  const home = mkdtempSync(join(tmpdir(), 'envkeep-hardening-'))
  t.teardown(() => rmSync(home, { recursive: true, force: true }))
  const configDir = join(home, 'config')
  const project = join(home, 'project')
  mkdirSync(project, { recursive: true })
  const marker = join(home, 'marker')
  const hook = join(home, 'hook.cjs')
  writeFileSync(hook, `require('node:fs').appendFileSync(${JSON.stringify(marker)}, 'node ran the hook\\n')\n`)
  const bashHook = join(home, 'hook.sh')
  writeFileSync(bashHook, `echo "bash ran the hook" >> ${JSON.stringify(marker)}\n`)
  const env = { ENVKEEP_CONFIG_DIR: configDir, NO_COLOR: '1', ENVKEEP_FALLBACK_KEYRING: '0' }
  const bin = async (args: string[], extra: Record<string, string> = {}, cwd = project) => runBin(args, { ...env, ...extra }, cwd).done

  t.equal((await server.admin(['admin', 'user', 'create', '--email', 'ana@example.com', '--name', 'Ana Owner', '--password-stdin'], PASSWORD)).code, 0)
  const created = await server.admin(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'ana@example.com', '--json'])
  const vaultId = (JSON.parse(created.stdout.trim().split('\n').pop()!) as { vault: { id: string } }).vault.id
  // what an editor stored: code for every interpreter, and ordinary variables
  const vars = { NODE_OPTIONS: `--require ${hook}`, BASH_ENV: bashHook, PORT: '8080', PEM, HOSTILE }
  for (const [n, v] of Object.entries(vars)) t.equal((await server.admin(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', n], v)).code, 0, n)

  const person = createPerson(baseUrl, 'ana@example.com', PASSWORD)
  const login = runBin(['login', '--no-browser', '--base-url', baseUrl], env)
  const [, link] = await login.waitFor('stderr', /\n\s+(http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+)\n/)
  await person.consent(link!, { push: false })
  const signedIn = await login.done
  t.equal(signedIn.code, 0, signedIn.stderr)
  t.match(signedIn.stderr, /Signed in to \S+ as Ana Owner <ana@example\.com>/, 'login says who')

  await t.test('run holds back variables that run code, names them, and gives them only when allowed by name', async (t) => {
    const node = await bin([
      'run',
      'shop',
      'development',
      '--',
      process.execPath,
      '-e',
      'console.log(process.env.PORT, (process.env.NODE_OPTIONS ?? "").includes("hook") ? "hook" : "none")',
    ])
    t.equal(node.code, 0, node.stderr)
    t.equal(node.stdout, '8080 none\n', 'the ordinary variable arrives; NODE_OPTIONS does not')
    t.notOk(existsSync(marker), 'the hook did not run')
    t.match(node.stderr, /held back BASH_ENV, NODE_OPTIONS: they make programs run code; allow by name with --allow BASH_ENV/)
    t.notMatch(node.stderr, /hook|--require/, 'names only, never values')

    const bash = await bin(['run', 'shop', 'development', '--', 'bash', '-c', 'echo "$PORT"'])
    t.equal(bash.code, 0, bash.stderr)
    t.equal(bash.stdout, '8080\n')
    t.notOk(existsSync(marker), 'bash read no BASH_ENV')

    const allowed = await bin(['run', 'shop', 'development', '--allow', 'NODE_OPTIONS', '--', process.execPath, '-e', 'console.log("ok")'])
    t.equal(allowed.code, 0, allowed.stderr)
    // at least once: on Node 22 the preload runs again, same process, in the module-hooks worker thread that the test runner's inherited loader starts
    t.match(readFileSync(marker, 'utf8'), /^(node ran the hook\n)+$/, '--allow NODE_OPTIONS gives it')
    t.match(allowed.stderr, /held back BASH_ENV:/)
    rmSync(marker)

    // the linked folder lists it
    writeFileSync(
      join(project, '.envkeep.json'),
      JSON.stringify({ baseUrl, vault: { id: vaultId, name: 'shop' }, environment: 'development', allow: ['BASH_ENV'] }),
    )
    const linked = await bin(['run', '--', 'bash', '-c', 'true'])
    t.equal(linked.code, 0, linked.stderr)
    t.equal(readFileSync(marker, 'utf8'), 'bash ran the hook\n', "the folder's allow list gives BASH_ENV")
    t.match(linked.stderr, /held back NODE_OPTIONS:/)
    rmSync(marker)
    rmSync(join(project, '.envkeep.json'))

    const token = await bin(['run', 'shop', 'development', '--', process.execPath, '-e', 'console.log(process.env.ENVKEEP_OIDC_TOKEN ?? "none")'], {
      ENVKEEP_OIDC_TOKEN: 'canary-ci-identity-token',
    })
    t.equal(token.stdout, 'none\n', 'the CI identity token is not inherited by the command')
  })

  await t.test('pull --format shell (for eval) holds back the same names; the data formats stay exact', async (t) => {
    const shell = await bin(['pull', 'shop', 'development', '--format', 'shell'])
    t.equal(shell.code, 0, shell.stderr)
    t.match(shell.stdout, /^export PORT='8080'$/m)
    t.notMatch(shell.stdout, /NODE_OPTIONS|BASH_ENV/)
    t.match(shell.stderr, /held back BASH_ENV, NODE_OPTIONS: they make programs run code/)
    const allowed = await bin(['pull', 'shop', 'development', '--format', 'shell', '--allow', 'NODE_OPTIONS'])
    t.match(allowed.stdout, /^export NODE_OPTIONS=/m)
    t.notMatch(allowed.stdout, /BASH_ENV/)
    const json = await bin(['pull', 'shop', 'development', '--json'])
    t.equal(JSON.parse(json.stdout).NODE_OPTIONS, `--require ${hook}`, 'json: every variable, exactly')
    t.equal(json.stderr, '')
  })

  await t.test('run --mask hides each line of a multi-line value when the output is prefixed', async (t) => {
    const script = 'for (const l of process.env.PEM.split("\\n")) console.log("> " + l)'
    const r = await bin(['run', 'shop', 'development', '--mask', '--', process.execPath, '-e', script])
    t.equal(r.code, 0, r.stderr)
    t.notMatch(r.stdout, /canary-pem/, 'no line of the key shows')
    t.match(r.stdout, /> \*\*\*\*\*\n> \*\*\*\*\*\n/)
  })

  await t.test('get and pull: control characters escaped visibly at a terminal, exact to a pipe', async (t) => {
    const inProcess = async (args: string[], tty: boolean) => {
      const stdout = new PassThrough() as PassThrough & { isTTY?: boolean }
      if (tty) stdout.isTTY = true
      const chunks: Buffer[] = []
      stdout.on('data', (c: Buffer) => chunks.push(c))
      const r = await runCli(args, { env: { ...env }, stdout, cwd: project, homedir: home })
      return { ...r, stdout: Buffer.concat(chunks).toString('utf8') }
    }
    const got = await inProcess(['get', 'shop', 'development', 'HOSTILE'], true)
    t.equal(got.code, 0, got.stderr)
    t.notMatch(got.stdout, /[\u001b\u0007\u009b\u202e]/, 'no control or bidi character reaches the terminal')
    t.equal(got.stdout, 'x\\x1b]52;c;Y2FuYXJ5\\x07\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eend\n', 'each shown visibly')
    t.match(got.stderr, /control characters are shown escaped/)
    const pulled = await inProcess(['pull', 'shop', 'development', '--format', 'shell'], true)
    t.notMatch(pulled.stdout, /[\u001b\u0007\u009b\u202e]/)
    t.match(pulled.stdout, /-----BEGIN KEY-----\ncanary-pem-line-one/, 'line breaks of a multi-line value stay')
    writeFileSync(join(project, 'other.env'), 'HOSTILE=other\n')
    const diffed = await inProcess(['diff', 'shop', 'development', 'other.env', '--show-values'], true)
    t.match(diffed.stdout, /~ HOSTILE: "x\\u001b\]52;c;Y2FuYXJ5\\u0007.*\\x9b31m\\u202eend" -> "other"/)
    t.notMatch(diffed.stdout, /[\u001b\u0007\u009b\u202e]/, 'diff --show-values too')
    const piped = await inProcess(['get', 'shop', 'development', 'HOSTILE'], false)
    t.equal(piped.stdout, HOSTILE, 'raw to a pipe')
    t.equal(piped.stderr, '')
    const json = await bin(['pull', 'shop', 'development', '--json'])
    t.equal(JSON.parse(json.stdout).HOSTILE, HOSTILE, 'the binary piped: exact')
  })

  await t.test('whoami says who; open starts the browser with the opener of login, or prints the link', async (t) => {
    const who = await bin(['whoami'])
    t.equal(who.code, 0, who.stderr)
    t.match(who.stdout, /^person: +Ana Owner <ana@example\.com>$/m)
    const json = JSON.parse((await bin(['whoami', '--json'])).stdout)
    t.same(json.person, { email: 'ana@example.com', name: 'Ana Owner' })

    const opened: string[] = []
    const r = await runCli(['open', 'shop'], { env: { ...env }, cwd: project, homedir: home, openBrowser: async (u) => void opened.push(u) })
    t.equal(r.code, 0, r.stderr)
    t.same(opened, [`${baseUrl}/v/${vaultId}`], 'the browser was started (no terminal needed)')
    const none = await runCli(['open', 'shop'], {
      env: { ...env },
      cwd: project,
      homedir: home,
      openBrowser: async () => {
        throw new Error('no browser')
      },
    })
    t.equal(none.code, 0)
    t.equal(none.stdout, `${baseUrl}/v/${vaultId}\n`, 'no browser could start: the link is printed')
    t.match(none.stderr, /Could not start a browser/)
    // the real opener, on a machine with no display
    const real = await bin(['open', 'shop'], { DISPLAY: '', WAYLAND_DISPLAY: '' })
    t.equal(real.stdout, `${baseUrl}/v/${vaultId}\n`)
  })

  await t.test("the offline copy's date is sealed: an edited copy is not used; an old-format copy counts as expired", async (t) => {
    const saved = await bin(['pull', 'shop', 'development', '--fallback', '--json'])
    t.equal(saved.code, 0, saved.stderr)
    const dir = join(configDir, 'fallback')
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'))
    t.ok(files.length >= 1)
    const originals = new Map(files.map((f) => [f, readFileSync(join(dir, f), 'utf8')]))
    await server.stop()
    const offline = await bin(['run', 'shop', 'development', '--fallback', '--', process.execPath, '-e', 'console.log(process.env.PORT)'])
    t.equal(offline.stdout, '8080\n', 'the untouched copy is used')
    // someone changes the date (as they would to make a copy older than its maximum age pass)
    for (const [f, text] of originals) {
      const copy = JSON.parse(text) as { savedAt: string }
      copy.savedAt = new Date(Date.parse(copy.savedAt) - 1000).toISOString()
      writeFileSync(join(dir, f), JSON.stringify(copy))
    }
    const edited = await bin(['run', 'shop', 'development', '--fallback', '--', process.execPath, '-e', 'console.log(process.env.PORT)'])
    t.equal(edited.code, 1, 'the edited copy is refused')
    t.equal(edited.stdout, '')
    t.match(edited.stderr, /offline copy cannot be opened/)
    // a copy written before its date was sealed
    for (const [f, text] of originals) writeFileSync(join(dir, f), JSON.stringify({ ...JSON.parse(text), v: 1 }))
    const older = await bin(['pull', 'shop', 'development', '--fallback'])
    t.equal(older.code, 1)
    t.match(older.stderr, /saved by an older envkeep: its age cannot be trusted, so it counts as expired/)
    t.notMatch(older.stdout, /8080/)
  })
})

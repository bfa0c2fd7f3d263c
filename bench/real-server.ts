/**
 * The real stack, in its own process: the envkeep plugin on SQLite (the
 * seeded file, WAL) with a local master key, the access log on, and rate
 * limits raised through options. Talks to bench/run.ts over IPC:
 * sends `{ ready, port }`, answers `stats` with its peak RSS.
 */
import Fastify from 'fastify'
import { BASE_URL, BENCH_PLANS, BENCH_RATE_LIMIT, stackPackage } from './seed.js'

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
process.send({ ready: true, port })

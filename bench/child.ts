import type { FastifyInstance } from 'fastify'

/**
 * A compared server's side of bench/run.ts's IPC (the bare one and the floor): listens on
 * 127.0.0.1, answers `cpu` with its user + system CPU so far (µs), closes and exits on `stop`,
 * and says `{ ready, port }` once listening.
 */
export async function serveForBench(app: FastifyInstance): Promise<void> {
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  process.on('message', (m: unknown) => {
    if (m === 'cpu') {
      const u = process.cpuUsage()
      process.send?.({ cpu: u.user + u.system })
    } else if (m === 'stop') void app.close().then(() => process.exit(0))
  })
  process.send?.({ ready: true, port: typeof address === 'object' && address ? address.port : 0 })
}

import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createEnvkeepCore, personActor, type Domain } from '../../src/index.js'
import { createTestPeople, PEOPLE, TTL, type Built } from '../pages/helpers.js'

export interface Received {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** the raw body, as signed */
  readonly body: string
}

/**
 * A local webhook receiver on 127.0.0.1: records every request, answers
 * with `respond` (200 by default); closed at teardown.
 */
export async function receiver(
  t: { teardown(fn: () => unknown): void },
  respond: (r: Received, res: ServerResponse) => void = (_r, res) => res.writeHead(200).end('ok'),
): Promise<{ url: string; got: Received[]; waitFor(n: number, ms?: number): Promise<Received[]>; respond: typeof respond }> {
  const got: Received[] = []
  const state = { respond }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const r = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }
      got.push(r)
      state.respond(r, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    got,
    get respond() {
      return state.respond
    },
    set respond(fn) {
      state.respond = fn
    },
    async waitFor(n, ms = 5000) {
      const end = Date.now() + ms
      while (got.length < n && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
      return got
    },
  }
}

/** The domain layer on the app's store and keyring, as the API would call it. */
export function domainOf(b: Built, o: { allowPrivateWebhooks?: boolean } = {}): Domain {
  return createEnvkeepCore({
    storage: b.storage,
    keyring: b.keyring,
    now: () => b.clock.now,
    importTtlMs: TTL,
    people: createTestPeople(),
    allowPrivateWebhooks: o.allowPrivateWebhooks ?? true,
  }).domain
}

export const editorActor = personActor({ personId: PEOPLE.editor!.id, signInId: null, clientId: null })
export const ownerActor = personActor({ personId: PEOPLE.owner!.id })

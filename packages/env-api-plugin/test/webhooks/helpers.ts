import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createEnvkeepCore, personActor, type Domain, type Storage } from '../../src/index.js'
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
  // waitFor's waiters, woken by each request as it arrives (no polling)
  const waiters = new Set<() => void>()
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const r = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }
      got.push(r)
      state.respond(r, res)
      for (const wake of waiters) wake()
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
    /** Resolves with what arrived once `n` requests have (or after `ms`, with fewer: the test then fails on them). */
    waitFor(n, ms = 5000) {
      if (got.length >= n) return Promise.resolve(got)
      return new Promise<Received[]>((resolve) => {
        const done = () => {
          waiters.delete(wake)
          clearTimeout(timer)
          resolve(got)
        }
        const wake = () => {
          if (got.length >= n) done()
        }
        const timer = setTimeout(done, ms)
        waiters.add(wake)
      })
    },
  }
}

/**
 * Resolves once the store has recorded `n` more delivery attempts: the
 * worker's `finishAttempt` calls are the signal (a delivery is recorded
 * after the receiver answered, so a test awaits this rather than sleeping).
 */
export function attemptsRecorded(storage: Pick<Storage, 'finishAttempt'>, n: number): Promise<void> {
  const original = storage.finishAttempt
  let left = n
  return new Promise<void>((resolve) => {
    storage.finishAttempt = async (attempt) => {
      const r = await original.call(storage, attempt)
      if (--left === 0) {
        storage.finishAttempt = original
        resolve()
      }
      return r
    }
  })
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

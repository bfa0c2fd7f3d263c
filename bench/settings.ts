// What the real server (real-server.ts) shares with the seeding and the load generator. Kept
// apart from seed.ts, which loads `@envkeep/env-api-plugin/testing` (the storage contracts and
// node:assert): the real server imports only this, so its memory is the server's own.
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

/** The base URL the bench's real stack is configured with (never resolved: tokens are bound to it). */
export const BASE_URL = 'https://envkeep.bench'
export const CLI_CLIENT = `${BASE_URL}/cli/oauth-client.json`
export const RESOURCE = `${BASE_URL}/api/env`
/** Plan limits raised for the run: the push cases pile up pending pushes in one vault. */
export const BENCH_PLANS = { 'self-hosted': { maxVariables: 1e12, maxBytes: 1e15 } }
/** Request limits raised for the run (the spec's defaults are 60 a minute, 5,000 a day). */
export const BENCH_RATE_LIMIT = { perMinute: 1e9, perDay: 1e9 }

/**
 * A package of this tree, or of the other build in BENCH_STACK (a folder holding
 * `packages/<dist>/dist`, e.g. an older commit): the database is then made by that build's
 * own migrations, so the real server of that build opens it.
 */
export function stackPackage<T>(pkg: string, dist: string): Promise<T> {
  const stack = process.env.BENCH_STACK
  return (stack ? import(pathToFileURL(join(stack, 'packages', dist, 'dist', 'index.js')).href) : import(pkg)) as Promise<T>
}

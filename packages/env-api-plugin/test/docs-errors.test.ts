import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const here = dirname(fileURLToPath(import.meta.url))
const doc = readFileSync(join(here, '../../../docs/errors.md'), 'utf8')

/** Every (status, error) row of the spec's tables for /api/env. */
const SPEC_ROWS: Array<[number, string]> = [
  [400, 'invalid_request'],
  [401, 'invalid_token'],
  [403, 'forbidden'],
  [403, 'push_not_allowed'],
  [404, 'not_found'],
  [405, 'method_not_allowed'],
  [413, 'too_large'],
  [415, 'unsupported_media_type'],
  [429, 'rate_limited'],
  [500, 'decrypt_failed'],
  [500, 'server_error'],
  [503, 'server_error'],
  [504, 'server_error'],
  [503, 'not_configured'],
  [507, 'storage_limit'],
]

t.test('docs/errors.md lists every spec row with a test that exists', async (t) => {
  const rows = doc.split('\n').filter((l) => /^\| \d{3} \|/.test(l))
  for (const [status, code] of SPEC_ROWS) {
    const row = rows.find((l) => l.startsWith(`| ${status} | \`${code}\` |`))
    t.ok(row, `${status} ${code} is documented`)
    const files = [...(row ?? '').matchAll(/`((?:api|crypto)\/[a-z-]+\.test\.ts)`/g)].map((m) => m[1] as string)
    t.ok(files.length > 0, `${status} ${code} names a test`)
    for (const f of files) t.ok(existsSync(join(here, f)), `${f} exists`)
  }
})

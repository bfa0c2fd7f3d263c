import { createEnvkeepCore, type Keyring, type Storage } from '@envkeep/env-api-plugin'
import { sql, type Kysely } from 'kysely'

export interface OpenedCounts {
  readonly variables: number
  readonly staged: number
  readonly history: number
  readonly webhookSecrets: number
}

function groupBy<T>(rows: readonly T[], key: (r: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>()
  for (const r of rows) {
    const k = key(r)
    const list = m.get(k)
    if (list) list.push(r)
    else m.set(k, [r])
  }
  return m
}

const bytes = (v: unknown): Uint8Array => (v instanceof Uint8Array ? v : Buffer.from(v as ArrayBuffer))

/**
 * Opens every sealed thing of a database with the master key, through the plugin's own
 * crypto (the same data keys and additional data as the server): variables, the values of
 * pushes waiting, both sides of every history entry, and webhook signing secrets. Throws on
 * the first that does not open (the plugin's decrypt_failed); returns how many opened. The
 * opened values are dropped at once, never printed.
 */
export async function openEverything(storage: Storage, db: Kysely<unknown>, keyring: Keyring): Promise<OpenedCounts> {
  // the core's own crypto (the same data keys and additional data as the server); it adds nobody
  const { crypto } = createEnvkeepCore({ storage, keyring, people: { findPersonByEmail: async () => null } })
  const q = async <T>(query: ReturnType<typeof sql>) => (await query.execute(db)).rows as T[]
  type Row = { vault_id: string; environment: string; name: string; sealed: unknown }
  const vars = await q<Row>(sql`select vault_id, environment, name, sealed from variables`)
  for (const group of groupBy(vars, (r) => JSON.stringify([r.vault_id, r.environment])).values())
    await crypto.openValues(
      group[0]!.vault_id,
      group[0]!.environment,
      group.map((r) => ({ name: r.name, sealed: bytes(r.sealed) })),
    )
  const staged = await q<Row>(sql`select i.vault_id, i.environment, v.name, v.sealed from import_values v join imports i on i.id = v.import_id`)
  for (const group of groupBy(staged, (r) => JSON.stringify([r.vault_id, r.environment])).values())
    await crypto.openValues(
      group[0]!.vault_id,
      group[0]!.environment,
      group.map((r) => ({ name: r.name, sealed: bytes(r.sealed) })),
    )
  type H = { vault_id: string; environment: string; id: string; name: string; before: unknown; after: unknown }
  const history = await q<H>(
    sql`select s.vault_id, s.environment, s.id, e.name, e.before, e.after from change_entries e join change_sets s on s.seq = e.change_set_seq`,
  )
  let historySides = 0
  for (const group of groupBy(history, (r) => r.id).values()) {
    const entries = group.map((r) => ({ name: r.name, before: r.before === null ? null : bytes(r.before), after: r.after === null ? null : bytes(r.after) }))
    for (const side of ['before', 'after'] as const) {
      await crypto.openHistory(group[0]!.vault_id, group[0]!.environment, group[0]!.id, side, entries)
      historySides += entries.filter((e) => e[side] !== null && e[side].byteLength > 0).length // zero bytes: recorded as unreadable, never opened
    }
  }
  const hooks = await q<{ vault_id: string; id: string; sealed_secret: unknown }>(
    sql`select vault_id, id, sealed_secret from webhooks where sealed_secret is not null`,
  )
  for (const h of hooks) await crypto.openWebhookSecret(h.vault_id, h.id, bytes(h.sealed_secret))
  return { variables: vars.length, staged: staged.length, history: historySides, webhookSecrets: hooks.length }
}

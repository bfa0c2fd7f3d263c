import type { Usage } from '@envkeep/env-api-plugin'
import { type Compilable, sql } from 'kysely'
import type { SqlDialect } from './dialect.js'
import { fixedQuery, raw } from './fixed-query.js'
import { all, first, type Op, run } from './op.js'
import { fromJson, isSet, num, toJson } from './rows.js'
import { lockVaultAhead } from './vault-lock.js'

/**
 * A vault's usage for the storage limit (`StorageLimit`): its variables, counted
 * and summed, plus what its pending pushes stage, read from `staged_usage`, the
 * counter every write that stages or drops staged values keeps in its own
 * transaction (`stagedAdded`, `dropStaged`, `recountStaged`). Summing the staged
 * values instead grew with the pending pushes of the vault. Each runs inside
 * the caller's transaction, after the vault's row is locked (vault-lock.ts).
 */

// the usage figures of a vault, as two columns n and bytes (scalar subqueries: SQLite runs a
// join of the same figures several times slower)
const usageColumns = (vaultId: unknown) =>
  sql`(select count(*) from variables where vault_id = ${vaultId}) + coalesce((select values_count from staged_usage where vault_id = ${vaultId}), 0) as n,
    (select coalesce(sum(length(sealed)), 0) from variables where vault_id = ${vaultId}) + coalesce((select bytes from staged_usage where vault_id = ${vaultId}), 0) as bytes`

const usage = fixedQuery<[string], { n: unknown; bytes: unknown }>((d, arg) => raw(d, sql<{ n: unknown; bytes: unknown }>`select ${usageColumns(arg(0))}`))

/** A vault's usage now: its variables plus the staged values of its pending pushes. */
export function* usageOf(d: SqlDialect, vaultId: string) {
  const r = yield* first(usage(d, vaultId))
  return { n: num(r?.n ?? 0), bytes: num(r?.bytes ?? 0) } satisfies Usage
}

/** The start of a push: the vault's key, its usage, and which of `names` its environment holds now. */
export interface PushStart {
  readonly vault: { readonly wrapped_key: Uint8Array | null } | undefined
  readonly usage: Usage
  readonly current: ReadonlySet<string>
  /** whether the vault has a webhook (none can be added before this write ends: the vault is locked) */
  readonly hooked: boolean
}

// the environment's names among a JSON array of names, as a JSON array
const currentNames = (d: SqlDialect, vaultId: unknown, environment: unknown, names: unknown) =>
  d.name === 'postgres'
    ? sql`(select coalesce(json_agg(name), '[]') from variables where vault_id = ${vaultId} and environment = ${environment}
        and name in (select jsonb_array_elements_text(cast(${names} as jsonb))))`
    : sql`(select json_group_array(name) from variables where vault_id = ${vaultId} and environment = ${environment}
        and name in (select value from json_each(${names})))`

const pushStart = fixedQuery<[string, string, string], { wrapped_key: Uint8Array | null; n: unknown; bytes: unknown; current: unknown; hooked: unknown }>(
  (d, arg) =>
    raw(
      d,
      sql<never>`select wrapped_key, ${currentNames(d, arg(0), arg(1), arg(2))} as current, ${usageColumns(arg(0))},
        exists (select 1 from webhooks where vault_id = ${arg(0)}) as hooked from vaults where id = ${arg(0)}`,
    ),
  'push_start',
)

/**
 * A push's first step: one statement after the vault's row lock where the database takes
 * one (in the same statement as the lock, PostgreSQL would read the rows as they were
 * before it waited for the lock; sent `ahead`, the lock goes out with this statement, which
 * the database still runs only once the lock is held); SQLite's write transaction already
 * holds the database.
 */
export function* startPush(d: SqlDialect, vaultId: string, environment: string, names: readonly string[]): Op<PushStart> {
  if (d.rowLocks) yield* lockVaultAhead(d, vaultId)
  const r = yield* first(pushStart(d, vaultId, environment, toJson(names)))
  return {
    vault: r && { wrapped_key: r.wrapped_key },
    usage: { n: num(r?.n ?? 0), bytes: num(r?.bytes ?? 0) },
    current: new Set(r ? fromJson<string[]>(r.current) : []),
    hooked: r ? isSet(r.hooked) : false,
  }
}

const add = fixedQuery<[string, number, number], unknown>((d, arg) =>
  raw(
    d,
    sql`insert into staged_usage (vault_id, values_count, bytes) values (${arg(0)}, ${arg(1)}, ${arg(2)})
      on conflict (vault_id) do update set values_count = staged_usage.values_count + excluded.values_count, bytes = staged_usage.bytes + excluded.bytes`,
  ),
)

/** The statement (none for no value) counting a new push's `count` staged values of `size` sealed bytes in all. */
export function stagedAdded(d: SqlDialect, vaultId: string, count: number, size: number): Compilable<unknown>[] {
  return count > 0 ? [add(d, vaultId, count, size)] : []
}

const dropValues = fixedQuery<[string], { size: unknown }>((d, arg) =>
  raw(d, sql<{ size: unknown }>`delete from import_values where import_id = ${arg(0)} returning length(sealed) as size`),
)

const countDown = fixedQuery<[string, number, number], unknown>((d, arg) =>
  raw(d, sql`update staged_usage set values_count = values_count - ${arg(1)}, bytes = bytes - ${arg(2)} where vault_id = ${arg(0)}`),
)

/**
 * Drops the staged values of a push that stops being pending (applied, rejected, expired),
 * and counts them down. The values' rows are taken before the vault's count, as a reseal
 * takes them (PostgreSQL: the same order of row locks, so the two never wait on each other).
 */
export function* dropStaged(d: SqlDialect, vaultId: string, importId: string) {
  const gone = yield* all(dropValues(d, importId))
  if (gone.length > 0)
    yield* run(
      countDown(
        d,
        vaultId,
        gone.length,
        gone.reduce((n, r) => n + num(r.size), 0),
      ),
    )
}

const recount = fixedQuery<[string], unknown>((d, arg) =>
  raw(
    d,
    sql`insert into staged_usage (vault_id, values_count, bytes)
      select ${arg(0)}, count(*), coalesce(sum(length(iv.sealed)), 0)
      from import_values iv join imports i on i.id = iv.import_id
      where i.vault_id = ${arg(0)} and i.status = 'pending'
      on conflict (vault_id) do update set values_count = excluded.values_count, bytes = excluded.bytes`,
  ),
)

/** Counts a vault's staged values again (after they were sealed anew under another key: sizes may differ). */
export function* recountStaged(d: SqlDialect, vaultId: string) {
  yield* run(recount(d, vaultId))
}

import type {
  AccessLogEntry,
  ChangeEntry,
  ChangeSetDetail,
  ChangeSetFilter,
  ChangeSetSummary,
  ChangeVariablesResult,
  CurrentOptions,
  HistoryStore,
  SealedVariable,
  VariableMeta,
  VariablesChange,
} from '@envkeep/env-api-plugin'
import { StorageError, storageLimitRefusal } from '@envkeep/env-api-plugin'
import { sql } from 'kysely'
import { insertLog } from './access-log.js'
import type { SqlDialect, SqlRunner } from './dialect.js'
import { fixedQuery, raw } from './fixed-query.js'
import { all, first, type Op, run } from './op.js'
import { copyBytes, date, num } from './rows.js'
import { usageOf } from './staged-usage.js'
import { bumpVersion, insertChangeSet, putVariable, staleKey } from './vault-values.js'
import { lockVault } from './vault-lock.js'

/**
 * The values of environments and their history (history-store.ts in the
 * plugin): tables variables, change_sets and change_entries. The rules
 * (the storage limit) are the domain's (storage-rules.ts).
 */
export function createHistoryStore(s: SqlRunner): HistoryStore {
  const d = s.dialect
  return {
    readCurrent: (vaultId, environment, options) => s.read(() => readCurrent(d, vaultId, environment, options)) as never,
    changeVariables: (change, log) => s.write(() => changeVariables(d, change, log)),
    listChangeSets: (vaultId, filter) => s.read(() => listChangeSets(d, vaultId, filter)) as never,
    pruneHistory: (olderThan, keep) => s.write(() => pruneHistory(d, olderThan, keep)),
  }
}

/**
 * The read of a whole environment, the hot path: one statement (the version
 * and the values of the same moment), compiled once. The drivers hand out
 * fresh buffers for each row, so the values are not copied again.
 */
const readAll = fixedQuery<[string, string], { version: unknown; name: string | null; sealed: Uint8Array | null }>((d, arg) =>
  d.db
    .selectFrom('environments as e')
    .leftJoin('variables as v', (j) => j.onRef('v.vault_id', '=', 'e.vault_id').onRef('v.environment', '=', 'e.name'))
    .select(['e.version', 'v.name', 'v.sealed'])
    .where('e.vault_id', '=', arg(0))
    .where('e.name', '=', arg(1))
    .orderBy(d.byBytes('v.name')),
)

function* readCurrent(d: SqlDialect, vaultId: string, environment: string, o: CurrentOptions = {}) {
  const names = o.names === undefined ? undefined : [...new Set(o.names)]
  if (names?.length === 0) {
    const env = yield* first(d.db.selectFrom('environments').select('version').where('vault_id', '=', vaultId).where('name', '=', environment))
    return { version: num(env?.version ?? 0), variables: [] }
  }
  if (o.values !== false && names === undefined) {
    const rows = yield* all(readAll(d, vaultId, environment))
    const variables: SealedVariable[] = []
    for (const r of rows) if (r.name !== null && r.sealed !== null) variables.push({ name: r.name, sealed: r.sealed })
    return { version: num(rows[0]?.version ?? 0), variables }
  }
  const rows = yield* all(
    d.db
      .selectFrom('environments as e')
      .leftJoin('variables as v', (j) =>
        j
          .onRef('v.vault_id', '=', 'e.vault_id')
          .onRef('v.environment', '=', 'e.name')
          .$call((j) => (names === undefined ? j : j.on('v.name', 'in', names))),
      )
      .select(['e.version', 'v.name', 'v.sealed', 'v.updated_at', 'v.updated_by'])
      .where('e.vault_id', '=', vaultId)
      .where('e.name', '=', environment)
      .orderBy(d.byBytes('v.name')),
  )
  const version = num(rows[0]?.version ?? 0)
  const present = rows.filter((r) => r.name !== null)
  if (o.values === false) {
    return {
      version,
      variables: present.map((r): VariableMeta => ({ name: r.name as string, updatedAt: date(r.updated_at), updatedBy: r.updated_by ?? null })),
    }
  }
  return { version, variables: present.map((r): SealedVariable => ({ name: r.name as string, sealed: r.sealed as Uint8Array })) }
}

function* changeVariables(d: SqlDialect, change: VariablesChange, log: AccessLogEntry): Op<ChangeVariablesResult> {
  const { vaultId, environment } = change
  const vault = yield* lockVault(d, vaultId)
  const env = yield* first(d.db.selectFrom('environments').select('version').where('vault_id', '=', vaultId).where('name', '=', environment))
  if (!vault || !env) throw new StorageError('23503', 'variables_environment')
  const version = num(env.version)
  if (version !== change.ifVersion) return { ok: false, reason: 'changed' }
  if (staleKey(vault, change.sealedUnder)) return { ok: false, reason: 'stale_key' }
  const touched = [...change.set.map((v) => v.name), ...change.delete]
  const sizes = new Map<string, number>()
  if (touched.length > 0) {
    const rows = yield* all(
      d.db
        .selectFrom('variables')
        .select(['name', sql<number>`length(sealed)`.as('size')])
        .where('vault_id', '=', vaultId)
        .where('environment', '=', environment)
        .where('name', 'in', touched),
    )
    for (const r of rows) sizes.set(r.name, num(r.size))
  }
  const before = yield* usageOf(d, vaultId)
  const after = { ...before }
  for (const v of change.set) {
    after.n += sizes.has(v.name) ? 0 : 1
    after.bytes += v.sealed.byteLength - (sizes.get(v.name) ?? 0)
  }
  for (const name of change.delete) {
    const size = sizes.get(name)
    if (size === undefined) return { ok: false, reason: 'changed' }
    after.n -= 1
    after.bytes -= size
  }
  const over = storageLimitRefusal(before, after, change.limit)
  if (over) return over
  const at = change.now.getTime()
  for (const v of change.set) yield* putVariable(d, vaultId, environment, v, change.by, at)
  if (change.delete.length > 0)
    yield* run(
      d.db
        .deleteFrom('variables')
        .where('vault_id', '=', vaultId)
        .where('environment', '=', environment)
        .where('name', 'in', [...change.delete]),
    )
  yield* insertChangeSet(d, { ...change.changeSet, at: change.now })
  yield* bumpVersion(d, vaultId, environment)
  yield* insertLog(d, log)
  return { ok: true, value: version + 1 }
}

/**
 * Change sets as listChangeSets answers them: one statement, the change
 * sets chosen (and limited) in a subquery, joined to their entries (the
 * names of every entry for the summary; the values only when asked, and
 * with `name` only that name's).
 */
function* listChangeSets(d: SqlDialect, vaultId: string, f: ChangeSetFilter) {
  const chosen = d.db
    .selectFrom('change_sets as c')
    .select(['c.seq', 'c.id', 'c.vault_id', 'c.environment', 'c.at', 'c.by', 'c.how', 'c.ref'])
    .where('c.vault_id', '=', vaultId)
    .$if(f.environment !== undefined, (q) => q.where('c.environment', '=', f.environment ?? ''))
    .$if(f.ref !== undefined, (q) => q.where('c.ref', '=', f.ref ?? ''))
    .$if(f.id !== undefined, (q) => q.where('c.id', '=', f.id ?? ''))
    .$if(f.beforeSeq !== undefined, (q) => q.where('c.seq', '<', f.beforeSeq ?? 0))
    .$if(f.afterSeq !== undefined, (q) => q.where('c.seq', '>', f.afterSeq ?? 0))
    .$if(f.name !== undefined, (q) =>
      q.where(({ exists, selectFrom }) =>
        exists(
          selectFrom('change_entries as x')
            .select('x.name')
            .whereRef('x.change_set_seq', '=', 'c.seq')
            .where('x.name', '=', f.name ?? ''),
        ),
      ),
    )
    .orderBy('c.seq', 'desc')
    .$if(f.limit !== undefined, (q) => q.limit(Math.max(0, Math.trunc(f.limit ?? 0))))
  const withValues = f.entries === true
  const rows = yield* all(
    d.db
      .selectFrom(chosen.as('s'))
      .leftJoin('change_entries as e', 'e.change_set_seq', 's.seq')
      .select(['s.seq', 's.id', 's.vault_id', 's.environment', 's.at', 's.by', 's.how', 's.ref', 'e.name', 'e.kind'])
      // with `name`, only that entry's values leave the database (a change set may hold thousands)
      .$if(withValues, (q) =>
        q.select((eb) => {
          const only = f.name
          if (only === undefined) return [eb.ref('e.before').as('before'), eb.ref('e.after').as('after')]
          return [
            eb.case().when('e.name', '=', only).then(eb.ref('e.before')).end().as('before'),
            eb.case().when('e.name', '=', only).then(eb.ref('e.after')).end().as('after'),
          ]
        }),
      )
      .orderBy('s.seq', 'desc')
      .orderBy(d.byBytes('e.name')),
  )
  const out: (ChangeSetSummary & { entries?: ChangeEntry[] })[] = []
  let last: { seq: number; names: Record<ChangeEntry['kind'], string[]>; entries: ChangeEntry[] } | undefined
  for (const r of rows) {
    const seq = num(r.seq)
    if (last?.seq !== seq) {
      last = { seq, names: { added: [], changed: [], deleted: [] }, entries: [] }
      const summary: ChangeSetSummary = {
        id: r.id,
        seq,
        vaultId: r.vault_id,
        environment: r.environment,
        at: date(r.at),
        by: r.by,
        how: r.how,
        ref: r.ref,
        added: last.names.added,
        changed: last.names.changed,
        deleted: last.names.deleted,
      }
      out.push(withValues ? ({ ...summary, entries: last.entries } satisfies ChangeSetDetail) : summary)
    }
    if (r.name === null || r.kind === null) continue
    last.names[r.kind].push(r.name)
    if (withValues && (f.name === undefined || r.name === f.name)) {
      const { before, after } = r
      last.entries.push({ name: r.name, kind: r.kind, before: before ? copyBytes(before) : null, after: after ? copyBytes(after) : null })
    }
  }
  return out
}

function* pruneHistory(d: SqlDialect, olderThan: Date, keep: number) {
  const removed = yield* run(
    raw(
      d,
      sql`delete from change_entries where (change_set_seq, name) in (
        select change_set_seq, name from (
          select e.change_set_seq, e.name, c.at,
                 row_number() over (partition by c.vault_id, c.environment, e.name order by c.seq desc) as newer
          from change_entries e join change_sets c on c.seq = e.change_set_seq) ranked
        where newer > ${Math.max(0, Math.trunc(keep))} and at < ${olderThan.getTime()})`,
    ),
  )
  yield* run(raw(d, sql`delete from change_sets where not exists (select 1 from change_entries e where e.change_set_seq = change_sets.seq)`))
  return { ok: true as const, value: removed }
}

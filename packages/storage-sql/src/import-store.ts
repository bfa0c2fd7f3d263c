import type {
  AccessLogEntry,
  CreateImportResult,
  DecideImportResult,
  ImportDecision,
  ImportRecord,
  ImportStore,
  ImportWithValues,
  NewImport,
  RefusedLine,
  SealedVariable,
} from '@envkeep/env-api-plugin'
import type { Compilable } from 'kysely'
import { expiredPush, overwritesOf, plannedPush, pushExpiredEntry, pushHasExpired, StorageError } from '@envkeep/env-api-plugin'
import { insertLog, logInsert } from './access-log.js'
import type { SqlDialect, SqlRunner } from './dialect.js'
import { fixedQuery } from './fixed-query.js'
import { all, first, type Op, run, together } from './op.js'
import { bytes, date, dateOrNull, fromJson, isSet, toJson } from './rows.js'
import type { ImportsTable } from './schema.js'
import { dropStaged, stagedAdded, startPush } from './staged-usage.js'
import { bumpVersion, insertChangeSet, staleKey } from './vault-values.js'
import { lockVault } from './vault-lock.js'

/** Pushes (import-store.ts in the plugin): tables imports and import_values. The expiry rules are the domain's (storage-rules.ts). */
export function createImportStore(s: SqlRunner): ImportStore {
  const d = s.dialect
  return {
    createImport: (input, log) => s.write(() => createImport(d, input, log)),
    getImport: async (importId, now, options) => {
      const values = options?.values === true
      const found = await s.read(() => readImport(d, importId, values))
      if (!found || !pushHasExpired(found, now)) return found as never
      return (await s.write(() => expireNow(d, importId, values))) as never
    },
    decideImport: (decision, log) => s.write(() => decideImport(d, decision, log)),
    expireImports: (now) => s.write(() => expireImports(d, now)),
    listImports: (vaultId, filter) =>
      s.read(function* () {
        const rows = yield* all(
          d.db
            .selectFrom('imports')
            .selectAll()
            .where('vault_id', '=', vaultId)
            .$if(filter.status !== undefined, (q) => q.where('status', '=', filter.status ?? 'pending'))
            .orderBy('created_at', 'desc')
            .orderBy('id', 'desc')
            .limit(Math.max(0, Math.trunc(filter.limit))),
        )
        return rows.map(toImport)
      }),
  }
}

type ImportRow = Omit<ImportsTable, 'names' | 'overwrites' | 'deletes' | 'refused'> & {
  names: unknown
  overwrites: unknown
  deletes: unknown
  refused: unknown
}

function toImport(r: ImportRow): ImportRecord {
  return {
    id: r.id,
    vaultId: r.vault_id,
    environment: r.environment,
    senderId: r.sender_id,
    signInId: r.sign_in_id,
    status: r.status,
    names: fromJson<string[]>(r.names),
    overwrites: fromJson<string[]>(r.overwrites),
    deletes: fromJson<string[]>(r.deletes),
    refused: fromJson<RefusedLine[]>(r.refused),
    createdAt: date(r.created_at),
    expiresAt: date(r.expires_at),
    decidedAt: dateOrNull(r.decided_at),
    decidedBy: r.decided_by,
    reason: r.reason ?? null,
  }
}
function* importRow(d: SqlDialect, importId: string) {
  const r = yield* first(d.db.selectFrom('imports').selectAll().where('id', '=', importId))
  return r && toImport(r)
}

function* stagedValues(d: SqlDialect, importId: string) {
  const rows = yield* all(d.db.selectFrom('import_values').select(['name', 'sealed']).where('import_id', '=', importId).orderBy(d.byBytes('name')))
  return rows.map((r): SealedVariable => ({ name: r.name, sealed: r.sealed }))
}

/** A push, with its staged values when asked (there are none once it is decided). */
function* readImport(d: SqlDialect, importId: string, values: boolean) {
  const imp = yield* importRow(d, importId)
  if (!imp || !values) return imp ?? null
  const staged = imp.status === 'pending' ? yield* stagedValues(d, importId) : []
  return { ...imp, values: staged } satisfies ImportWithValues
}

/** Moves a pending push to `expired` (decided at its expiry), drops its staged values, logs it; the push as it is after. */
function* expire(d: SqlDialect, imp: ImportRecord) {
  const changed = yield* run(
    d.db
      .updateTable('imports')
      .set((eb) => ({ status: 'expired', decided_at: eb.ref('expires_at'), decided_by: null }))
      .where('id', '=', imp.id)
      .where('status', '=', 'pending'),
  )
  if (changed === 0) return (yield* importRow(d, imp.id)) ?? imp
  yield* dropStaged(d, imp.vaultId, imp.id)
  yield* insertLog(d, pushExpiredEntry(imp))
  return expiredPush(imp)
}

/** getImport's second step, for a push whose time has come: expired under the vault's lock, then read as asked. */
function* expireNow(d: SqlDialect, importId: string, values: boolean) {
  const head = yield* first(d.db.selectFrom('imports').select('vault_id').where('id', '=', importId))
  if (!head) return null
  yield* lockVault(d, head.vault_id)
  const fresh = yield* importRow(d, importId)
  if (!fresh) return null
  const imp = fresh.status === 'pending' ? yield* expire(d, fresh) : fresh
  return values ? ({ ...imp, values: [] } satisfies ImportWithValues) : imp
}

const insertImport = fixedQuery<unknown[], unknown>((d, arg) =>
  d.db.insertInto('imports').values({
    id: arg(0),
    vault_id: arg(1),
    environment: arg(2),
    sender_id: arg(3),
    sign_in_id: arg(4),
    status: arg(5),
    names: arg(6),
    overwrites: arg(7),
    deletes: arg(8),
    refused: arg(9),
    created_at: arg(10),
    expires_at: arg(11),
    decided_at: arg(12),
    decided_by: arg(13),
  }),
)

/** The insert of `count` staged values, its text compiled once per dialect and count. */
const insertStagedOf = (count: number) =>
  fixedQuery<unknown[], unknown>((d, arg) =>
    d.db.insertInto('import_values').values(Array.from({ length: count }, (_, i) => ({ import_id: arg(3 * i), name: arg(3 * i + 1), sealed: arg(3 * i + 2) }))),
  )

/** Staged values go in statements of up to this many rows, each compiled once per size. */
const MOST_STAGED = 32
const insertStaged = Array.from({ length: MOST_STAGED + 1 }, (_, n) => (n === 0 ? null : insertStagedOf(n)))

/** The inserts of a push's staged values, up to MOST_STAGED a statement. */
function stagedInserts(d: SqlDialect, importId: string, values: readonly SealedVariable[]): Compilable<unknown>[] {
  const out: Compilable<unknown>[] = []
  for (let at = 0; at < values.length; at += MOST_STAGED) {
    const part = values.slice(at, at + MOST_STAGED)
    out.push((insertStaged[part.length] as NonNullable<(typeof insertStaged)[number]>)(d, ...part.flatMap((v) => [importId, v.name, bytes(v.sealed)])))
  }
  return out
}

/** The push made (or why not), and whether its vault has a webhook (seen under the vault's lock). */
function* createImport(d: SqlDialect, input: NewImport, log: AccessLogEntry): Op<CreateImportResult> {
  const start = yield* startPush(
    d,
    input.vaultId,
    input.environment,
    input.values.map((v) => v.name),
  )
  const { hooked } = start
  if (staleKey(start.vault, input.sealedUnder)) return { ok: false, reason: 'stale_key' }
  const { over, values, valued, deletes, names } = plannedPush(input, start.usage)
  if (over) return over
  const overwrites = overwritesOf(valued, start.current)
  const refused = input.refused.map((r) => ({ line: r.line, name: r.name, reason: r.reason }))
  // one statement on PostgreSQL: the push, its values, the vault's count and the log entry
  yield* together(d, [
    insertImport(
      d,
      input.id,
      input.vaultId,
      input.environment,
      input.senderId,
      input.signInId,
      'pending',
      toJson(names),
      toJson(overwrites),
      toJson(deletes),
      toJson(refused),
      input.createdAt.getTime(),
      input.expiresAt.getTime(),
      null,
      null,
    ),
    ...stagedInserts(d, input.id, values),
    ...stagedAdded(
      d,
      input.vaultId,
      values.length,
      values.reduce((n, v) => n + v.sealed.byteLength, 0),
    ),
    logInsert(d, [log]),
  ])
  const created: ImportRecord = {
    id: input.id,
    vaultId: input.vaultId,
    environment: input.environment,
    senderId: input.senderId,
    signInId: input.signInId,
    status: 'pending',
    names,
    overwrites,
    deletes,
    refused,
    createdAt: input.createdAt,
    expiresAt: input.expiresAt,
    decidedAt: null,
    decidedBy: null,
    reason: null,
  }
  return { ok: true, value: created, webhooks: hooked }
}

function* decideImport(d: SqlDialect, decision: ImportDecision, log: AccessLogEntry): Op<DecideImportResult> {
  const head = yield* first(d.db.selectFrom('imports').select('vault_id').where('id', '=', decision.importId))
  if (!head) throw new StorageError('23503', 'imports')
  yield* lockVault(d, head.vault_id)
  const { imp, hooked } = yield* decidingRow(d, decision.importId)
  if (imp.status !== 'pending') return { ok: false, reason: 'not_pending' }
  if (pushHasExpired(imp, decision.now)) {
    yield* expire(d, imp)
    return { ok: false, reason: 'not_pending' }
  }
  const at = decision.now.getTime()
  if (decision.decision === 'applied') {
    if (decision.ifVersion !== undefined) {
      const env = yield* first(d.db.selectFrom('environments').select('version').where('vault_id', '=', imp.vaultId).where('name', '=', imp.environment))
      if (Number(env?.version ?? 0) !== decision.ifVersion) return { ok: false, reason: 'changed' }
    }
    if (decision.changeSet) yield* insertChangeSet(d, decision.changeSet)
    const staged = yield* run(
      d.db
        .insertInto('variables')
        .columns(['vault_id', 'environment', 'name', 'sealed', 'updated_at', 'updated_by'])
        .expression((eb) =>
          eb
            .selectFrom('import_values')
            .select((s) => [
              s.val(imp.vaultId).as('vault_id'),
              s.val(imp.environment).as('environment'),
              'name',
              'sealed',
              s.val(at).as('updated_at'),
              s.val(decision.by).as('updated_by'),
            ])
            .where('import_id', '=', imp.id),
        )
        .onConflict((oc) =>
          oc.columns(['vault_id', 'environment', 'name']).doUpdateSet({
            sealed: (eb) => eb.ref('excluded.sealed'),
            updated_at: (eb) => eb.ref('excluded.updated_at'),
            updated_by: (eb) => eb.ref('excluded.updated_by'),
          }),
        ),
    )
    const deleted =
      imp.deletes.length === 0
        ? 0
        : yield* run(
            d.db
              .deleteFrom('variables')
              .where('vault_id', '=', imp.vaultId)
              .where('environment', '=', imp.environment)
              .where('name', 'in', [...imp.deletes]),
          )
    if (staged > 0 || deleted > 0) yield* bumpVersion(d, imp.vaultId, imp.environment)
  }
  const reason = decision.decision === 'rejected' ? (decision.reason ?? null) : null
  yield* run(
    d.db
      .updateTable('imports')
      .set({ status: decision.decision, decided_at: at, decided_by: decision.by, reason })
      .where('id', '=', imp.id)
      .where('status', '=', 'pending'),
  )
  // after the push's row (the order of row locks every write keeps: the push, its values, the vault's count)
  yield* dropStaged(d, imp.vaultId, imp.id)
  yield* insertLog(d, log)
  const decided: ImportRecord = { ...imp, status: decision.decision, decidedAt: decision.now, decidedBy: decision.by, reason }
  return { ok: true, value: decided, webhooks: hooked }
}

/**
 * The push being decided, and whether its vault has a webhook, in one statement (after the
 * vault's lock: none can be added before the decision commits).
 */
function* decidingRow(d: SqlDialect, importId: string) {
  const r = yield* first(
    d.db
      .selectFrom('imports')
      .selectAll()
      .select((eb) => eb.exists(eb.selectFrom('webhooks').select('webhooks.id').whereRef('webhooks.vault_id', '=', 'imports.vault_id')).as('hooked'))
      .where('id', '=', importId),
  )
  if (!r) throw new StorageError('23503', 'imports')
  return { imp: toImport(r), hooked: isSet(r.hooked) }
}

function* expireImports(d: SqlDialect, now: Date) {
  // skip locked (PostgreSQL): several processes sweep at once, and each push expires exactly once
  const due = yield* all(
    d.db
      .selectFrom('imports')
      .selectAll()
      .where('status', '=', 'pending')
      .where('expires_at', '<=', now.getTime())
      .orderBy('expires_at')
      .$if(d.rowLocks, (q) => q.forUpdate().skipLocked()),
  )
  for (const r of due) yield* expire(d, toImport(r))
  return { ok: true as const, value: due.length }
}

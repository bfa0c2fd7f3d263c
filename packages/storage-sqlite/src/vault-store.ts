import type { AccessAction, AccessLogEntry, AccessLogRow, ImportStore, SealedVariable, VariableMeta, VaultStore } from '@envkeep/env-api-plugin'
import { boundMethods } from '@envkeep/env-api-plugin'
import type { KeyMethods, VaultMethods } from '@envkeep/storage-sql'
import type { OpenDatabase } from './database.js'
import { SqliteImportStore } from './import-store.js'
import { SqliteStoreBase } from './sqlite-store-base.js'

/** What SQLite still writes itself: variables and the access log (vault-store.ts), and pushes (import-store.ts); the rest is the SQL core's. */
type OwnMethods = Omit<VaultStore, keyof VaultMethods | keyof KeyMethods>

/**
 * The vault store on SQLite. Every method runs synchronous better-sqlite3
 * work in one transaction through `runSync`, so nothing else on the shared
 * connection can interleave with it, and failures become `StorageError`.
 * Queries are built with kysely and compiled (typed against schema.ts), except
 * on the per-request paths (readVariables, the log insert),
 * which are hand-written and prepared once: compiling costs more than running.
 */
export function createSqliteVaultStore(d: OpenDatabase): OwnMethods {
  return {
    ...boundMethods(new SqliteVaultStore(d)),
    ...boundMethods(new SqliteImportStore(d)),
  } satisfies OwnMethods
}

/** The vault store's variables and access log. */
type VaultCore = Omit<OwnMethods, keyof ImportStore>

/** Statements of the hot read path, written by hand and prepared once. */
const READ_VARIABLES_SQL = 'select "name", "sealed" from "variables" where "vault_id" = ? and "environment" = ? order by "name"'
const READ_ONE_VARIABLE_SQL = 'select "name", "sealed" from "variables" where "vault_id" = ? and "environment" = ? and "name" = ?'
const ENV_VERSION_SQL = 'select "version" from "environments" where "vault_id" = ? and "name" = ?'
export const INSERT_LOG_SQL =
  'insert into "access_log" ("vault_id", "at", "person_id", "sign_in_id", "client_id", "action", "environment", "names", "address", "subject", "detail") values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'

/** Variables one group commit may hold before the remaining reads wait for the next (see #commitReads). */
const GROUP_COMMIT_ROWS = 1000

/** A readVariables call waiting for the next group commit. */
interface PendingRead {
  readonly vaultId: string
  readonly environment: string
  readonly log: AccessLogEntry
  readonly names?: readonly string[] | undefined
  resolve(r: { variables: SealedVariable[]; version: number }): void
  reject(err: unknown): void
}

class SqliteVaultStore extends SqliteStoreBase implements VaultCore {
  #pendingReads: PendingRead[] = []
  /** variables found by the last read of each environment ("vault/env"), to keep large reads out of group commits */
  readonly #lastReadSize = new Map<string, number>()

  // ---- variables ----------------------------------------------------------

  readVariables(
    vaultId: string,
    environment: string,
    log: AccessLogEntry,
    names?: readonly string[],
  ): Promise<{ variables: SealedVariable[]; version: number }> {
    const r = { vaultId, environment, log, names }
    // A read of chosen names is small and rare (the pages' Reveal): alone.
    // An environment that was large when last read is read at once, alone:
    // held over to the next turn, its rows outlive a young-generation GC
    // and cost more than the shared commit saves.
    if (names !== undefined || (this.#lastReadSize.get(`${vaultId}/${environment}`) ?? 0) >= GROUP_COMMIT_ROWS) {
      return this.tx('immediate', 'variables', () => this.#readOne(r))
    }
    return new Promise((resolve, reject) => {
      this.#pendingReads.push({ ...r, resolve, reject })
      if (this.#pendingReads.length === 1) setImmediate(() => this.#commitReads())
    })
  }

  /** One read with its log entry; runs inside the caller's transaction. */
  #readOne(r: Omit<PendingRead, 'resolve' | 'reject'>): { variables: SealedVariable[]; version: number } {
    let variables: SealedVariable[]
    if (r.names === undefined) {
      variables = this.stmt(READ_VARIABLES_SQL).all(r.vaultId, r.environment) as SealedVariable[]
      if (this.#lastReadSize.size >= 10_000) this.#lastReadSize.clear()
      this.#lastReadSize.set(`${r.vaultId}/${r.environment}`, variables.length)
    } else {
      const one = this.stmt(READ_ONE_VARIABLE_SQL)
      variables = [...new Set(r.names)]
        .sort()
        .map((n) => one.get(r.vaultId, r.environment, n) as SealedVariable | undefined)
        .filter((v) => v !== undefined)
    }
    const v = this.stmt(ENV_VERSION_SQL).get(r.vaultId, r.environment) as { version: number } | undefined
    this.log({ ...r.log, names: variables.map((x) => x.name) }) // the log names exactly what was read
    return { variables, version: v?.version ?? 0 }
  }

  /**
   * Group commit: the reads asked for during one turn of the event loop run
   * in one IMMEDIATE transaction, each with its log entry, and each promise
   * settles only once that transaction has committed (so no value leaves
   * before its entry is written). A transaction takes reads until they hold
   * GROUP_COMMIT_ROWS variables; the rest wait for the next turn, after
   * these are answered, so large reads are not all held in memory at once.
   * If the shared transaction fails, each of its reads is retried alone, so
   * one bad entry fails only its own read.
   */
  #commitReads(): void {
    const queue = this.#pendingReads
    this.#pendingReads = []
    const alone = (r: PendingRead): void => {
      this.tx('immediate', 'variables', () => this.#readOne(r)).then(r.resolve, r.reject)
    }
    if (queue.length === 1) {
      alone(queue[0] as PendingRead)
      return
    }
    // reads tried in the shared transaction; the rest go to the next turn
    let tried = 0
    const requeueRest = (): void => {
      const rest = queue.slice(tried)
      if (rest.length === 0) return
      const wasIdle = this.#pendingReads.length === 0
      this.#pendingReads = [...rest, ...this.#pendingReads]
      if (wasIdle) setImmediate(() => this.#commitReads())
    }
    this.tx('immediate', 'variables', () => {
      const results: { variables: SealedVariable[]; version: number }[] = []
      let rows = 0
      for (const r of queue) {
        if (rows >= GROUP_COMMIT_ROWS) break
        tried++
        const one = this.#readOne(r)
        results.push(one)
        rows += one.variables.length
      }
      return results
    }).then(
      (results) => {
        for (const [i, one] of results.entries()) (queue[i] as PendingRead).resolve(one)
        requeueRest()
      },
      () => {
        queue.slice(0, Math.max(tried, 1)).forEach(alone)
        tried = Math.max(tried, 1)
        requeueRest()
      },
    )
  }

  listVariableNames(vaultId: string, environment: string): Promise<VariableMeta[]> {
    return this.tx('none', 'variables', () =>
      this.all(
        this.db
          .selectFrom('variables')
          .select(['name', 'updated_at', 'updated_by'])
          .where('vault_id', '=', vaultId)
          .where('environment', '=', environment)
          .orderBy('name'),
      ).map((r) => ({ name: r.name, updatedAt: new Date(r.updated_at), updatedBy: r.updated_by })),
    )
  }

  // ---- access log ---------------------------------------------------------

  appendAccessLog(entry: AccessLogEntry): Promise<void> {
    return this.tx('none', 'access_log', () => this.log(entry))
  }

  listAccessLog(vaultId: string, filter: { environment?: string; action?: AccessAction; limit: number; before?: number }): Promise<AccessLogRow[]> {
    return this.tx('none', 'access_log', () => {
      let q = this.db.selectFrom('access_log').selectAll().where('vault_id', '=', vaultId)
      if (filter.environment !== undefined) q = q.where('environment', '=', filter.environment)
      if (filter.action !== undefined) q = q.where('action', '=', filter.action)
      if (filter.before !== undefined) q = q.where('id', '<', filter.before)
      const limit = Math.max(0, Math.trunc(filter.limit))
      return this.all(q.orderBy('id', 'desc').limit(limit)).map((r) => ({
        id: r.id,
        vaultId: r.vault_id,
        at: new Date(r.at),
        personId: r.person_id,
        signInId: r.sign_in_id,
        clientId: r.client_id,
        action: r.action as AccessAction,
        environment: r.environment,
        names: JSON.parse(r.names) as string[],
        address: r.address,
        subject: r.subject,
        detail: r.detail,
      }))
    })
  }
}

/** The parameters of INSERT_LOG_SQL for one entry. */
export function logParams(e: AccessLogEntry): unknown[] {
  return [e.vaultId, e.at.getTime(), e.personId, e.signInId, e.clientId, e.action, e.environment, JSON.stringify(e.names), e.address, e.subject, e.detail]
}

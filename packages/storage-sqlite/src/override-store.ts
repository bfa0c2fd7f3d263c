import type { AccessLogEntry, OverrideChange, OverrideRow, OverrideStore } from '@envkeep/env-api-plugin'
import type { OpenDatabase } from './database.js'
import { prepared } from './limits.js'
import { runSync } from './sqlite-errors.js'
import { INSERT_LOG_SQL, logParams } from './vault-store.js'

/** Personal overrides on SQLite (override-store.ts in the plugin): tables override_environments and overrides (migration 010). */
export function createSqliteOverrideStore(d: OpenDatabase): OverrideStore {
  return new SqliteOverrideStore(d)
}

const bytes = (u: Uint8Array): Buffer => (Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength))

class SqliteOverrideStore implements OverrideStore {
  readonly #d: OpenDatabase

  constructor(d: OpenDatabase) {
    this.#d = d
  }

  #q(text: string) {
    return prepared(this.#d, text)
  }

  readOverrides(vaultId: string, environment: string, personId?: string): Promise<{ allowed: boolean; overrides: OverrideRow[] }> {
    return runSync(
      this.#d,
      'none',
      () => {
        const allowed = this.#q('select 1 from override_environments where vault_id = ? and environment = ?').get(vaultId, environment) !== undefined
        const rows = this.#q(
          'select name, person_id, sealed, updated_at from overrides where vault_id = ? and environment = ? and (? is null or person_id = ?) order by name, person_id',
        ).all(vaultId, environment, personId ?? null, personId ?? null) as { name: string; person_id: string; sealed: Buffer; updated_at: number }[]
        return {
          allowed,
          overrides: rows.map((r) => ({ name: r.name, personId: r.person_id, sealed: new Uint8Array(r.sealed), updatedAt: new Date(r.updated_at) })),
        }
      },
      'overrides',
    )
  }

  changeOverride(change: OverrideChange, log: AccessLogEntry): Promise<boolean> {
    return runSync(
      this.#d,
      'immediate',
      () => {
        if (this.#q('select 1 from environments where vault_id = ? and name = ?').get(change.vaultId, change.environment) === undefined) return false
        let changed: number
        if (change.kind === 'allow') {
          changed = change.allow
            ? this.#q('insert into override_environments (vault_id, environment) values (?, ?) on conflict do nothing').run(change.vaultId, change.environment)
                .changes
            : this.#q('delete from override_environments where vault_id = ? and environment = ?').run(change.vaultId, change.environment).changes
          // the cascade may be off on a copy of the file: the rows go explicitly
          if (!change.allow && changed > 0) this.#q('delete from overrides where vault_id = ? and environment = ?').run(change.vaultId, change.environment)
        } else if (change.sealed === null) {
          changed = this.#q('delete from overrides where vault_id = ? and environment = ? and name = ? and person_id = ?').run(
            change.vaultId,
            change.environment,
            change.name,
            change.personId,
          ).changes
        } else {
          if (this.#q('select 1 from override_environments where vault_id = ? and environment = ?').get(change.vaultId, change.environment) === undefined)
            return false
          changed = this.#q(
            `insert into overrides (vault_id, environment, name, person_id, sealed, updated_at) values (?, ?, ?, ?, ?, ?)
             on conflict (vault_id, environment, name, person_id) do update set sealed = excluded.sealed, updated_at = excluded.updated_at`,
          ).run(change.vaultId, change.environment, change.name, change.personId, bytes(change.sealed), change.now.getTime()).changes
        }
        if (changed === 0) return false
        this.#q(INSERT_LOG_SQL).run(...logParams(log))
        return true
      },
      'overrides',
    )
  }
}

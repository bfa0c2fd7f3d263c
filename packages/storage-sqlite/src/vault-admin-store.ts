import type { AccessLogEntry, AuditRow, VaultStore } from '@envkeep/env-api-plugin'
import type { OpenDatabase } from './database.js'
import { prepared } from './limits.js'
import { runSync } from './sqlite-errors.js'
import { INSERT_LOG_SQL, logParams } from './vault-store.js'

type AdminMethods = Pick<VaultStore, 'renameVault' | 'deleteVault' | 'listAudit' | 'setEnvironmentRules'>

/**
 * Vault administration on SQLite (issue 14): rename, delete with its server-level audit
 * row, and an environment's rules. Deleting relies on the foreign keys' ON DELETE CASCADE
 * (the connection runs with foreign_keys = ON): members, environments and through them
 * variables, pushes and history, CI identities and the vault's access log go with it.
 */
export function createSqliteVaultAdminStore(d: OpenDatabase): AdminMethods {
  const q = (text: string) => prepared(d, text)
  return {
    renameVault(input: { vaultId: string; name: string }, log: AccessLogEntry): Promise<boolean> {
      return runSync(
        d,
        'immediate',
        () => {
          if (q('update vaults set name = ? where id = ?').run(input.name, input.vaultId).changes === 0) return false
          q(INSERT_LOG_SQL).run(...logParams(log))
          return true
        },
        'vaults',
      )
    },
    deleteVault(input: { vaultId: string; by: string | null; at: Date }): Promise<boolean> {
      return runSync(
        d,
        'immediate',
        () => {
          const v = q('select name from vaults where id = ?').get(input.vaultId) as { name: string } | undefined
          if (!v) return false
          q('delete from vaults where id = ?').run(input.vaultId)
          q('insert into audit_log (at, person_id, action, vault_id, vault_name) values (?, ?, ?, ?, ?)').run(
            input.at.getTime(),
            input.by,
            'vault_deleted',
            input.vaultId,
            v.name,
          )
          return true
        },
        'vaults',
      )
    },
    listAudit(filter: { limit: number }): Promise<AuditRow[]> {
      return runSync(
        d,
        'none',
        () =>
          (
            q('select id, at, person_id, action, vault_id, vault_name from audit_log order by id desc limit ?').all(Math.max(0, Math.trunc(filter.limit))) as {
              id: number
              at: number
              person_id: string | null
              action: 'vault_deleted'
              vault_id: string
              vault_name: string
            }[]
          ).map((r) => ({ id: r.id, at: new Date(r.at), personId: r.person_id, action: r.action, vaultId: r.vault_id, vaultName: r.vault_name })),
        'audit_log',
      )
    },
    setEnvironmentRules(input: { vaultId: string; name: string; ownersOnly?: boolean; secondPerson?: boolean }, log: AccessLogEntry): Promise<boolean> {
      return runSync(
        d,
        'immediate',
        () => {
          const flag = (v: boolean | undefined) => (v === undefined ? null : v ? 1 : 0)
          const r = q(
            'update environments set owners_only = coalesce(?, owners_only), second_person = coalesce(?, second_person) where vault_id = ? and name = ?',
          ).run(flag(input.ownersOnly), flag(input.secondPerson), input.vaultId, input.name)
          if (r.changes === 0) return false
          q(INSERT_LOG_SQL).run(...logParams(log))
          return true
        },
        'environments',
      )
    },
  }
}

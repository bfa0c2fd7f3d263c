import type { VaultStoreProbe } from '@envkeep/env-api-plugin/testing'
import type { OpenDatabase } from '../src/index.js'
import { connectionWaiters } from '../src/sqlite-errors.js'

/**
 * The contract suite's probe on the raw better-sqlite3 handle: counts rows
 * directly, and breaks chosen writes with TEMP triggers (they live only on
 * this connection and never touch the file's schema).
 */
export function createSqliteProbe(database: OpenDatabase): VaultStoreProbe {
  const { sqlite } = database
  let seq = 0
  const count = (text: string, ...params: unknown[]): number => (sqlite.prepare(text).get(...params) as { n: number }).n
  return {
    stagedValueCount: async (importId) => count('select count(*) as n from import_values where import_id = ?', importId),
    variableCount: async (vaultId, environment) => count('select count(*) as n from variables where vault_id = ? and environment = ?', vaultId, environment),
    importCount: async (vaultId) => count('select count(*) as n from imports where vault_id = ?', vaultId),
    accessLogCount: async (vaultId) => count('select count(*) as n from access_log where vault_id = ?', vaultId),
    lockWaiters: async () => connectionWaiters(database),
    async breakWrites(what, name) {
      const when = name === undefined ? '' : `when new.name = '${name.replace(/'/g, "''")}'`
      const made: string[] = []
      for (const event of what === 'access_log' ? ['insert'] : ['insert', 'update']) {
        const trigger = `test_break_${what}_${event}_${++seq}`
        sqlite.exec(`create temp trigger ${trigger} before ${event} on main.${what} ${when} begin select raise(abort, 'test: writes broken'); end`)
        made.push(trigger)
      }
      return async () => {
        for (const t of made) sqlite.exec(`drop trigger temp.${t}`)
      }
    },
  }
}

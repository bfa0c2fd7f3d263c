import type { ClientRegistration, ClientRegistrationStore } from '@envkeep/env-api-plugin'
import type { OpenDatabase } from './database.js'
import { prepared } from './limits.js'
import { runSync } from './sqlite-errors.js'

interface Row {
  client_id: string
  kind: ClientRegistration['kind']
  name: string
  redirect_uris: string
  created_at: number
  expires_at: number | null
}

/** MCP client registrations on SQLite (client-registration-store.ts in the plugin): table client_registrations (migration 010). */
export function createSqliteClientRegistrationStore(d: OpenDatabase): Required<ClientRegistrationStore> {
  return {
    saveClientRegistration: (r) =>
      runSync(
        d,
        'immediate',
        () => {
          prepared(
            d,
            `insert into client_registrations (client_id, kind, name, redirect_uris, created_at, expires_at) values (?, ?, ?, ?, ?, ?)
             on conflict (client_id) do update set kind = excluded.kind, name = excluded.name, redirect_uris = excluded.redirect_uris,
               created_at = excluded.created_at, expires_at = excluded.expires_at`,
          ).run(r.clientId, r.kind, r.name, JSON.stringify(r.redirectUris), r.createdAt.getTime(), r.expiresAt === null ? null : r.expiresAt.getTime())
        },
        'client_registrations',
      ),
    findClientRegistration: (clientId) =>
      runSync(
        d,
        'none',
        () => {
          const row = prepared(d, 'select client_id, kind, name, redirect_uris, created_at, expires_at from client_registrations where client_id = ?').get(
            clientId,
          ) as Row | undefined
          if (!row) return null
          return {
            clientId: row.client_id,
            kind: row.kind,
            name: row.name,
            redirectUris: JSON.parse(row.redirect_uris) as string[],
            createdAt: new Date(row.created_at),
            expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
          }
        },
        'client_registrations',
      ),
  }
}

import type { ClientRegistration, ClientRegistrationStore } from '@envkeep/env-api-plugin'
import { sql, type Kysely } from 'kysely'
import { read } from './database.js'
import { json, ms, rows } from './rows.js'

interface Row {
  client_id: string
  kind: ClientRegistration['kind']
  name: string
  redirect_uris: string[]
  created_at: string
  expires_at: string | null
}

/** MCP client registrations on PostgreSQL (client-registration-store.ts in the plugin): table client_registrations (migration 007). */
export class PostgresClientRegistrationStore implements Required<ClientRegistrationStore> {
  readonly #db: Kysely<unknown>

  constructor(db: Kysely<unknown>) {
    this.#db = db
  }

  saveClientRegistration(r: ClientRegistration): Promise<void> {
    return read(async () => {
      await sql`insert into client_registrations (client_id, kind, name, redirect_uris, created_at, expires_at)
        values (${r.clientId}, ${r.kind}, ${r.name}, ${json(r.redirectUris)}, ${r.createdAt.getTime()}, ${r.expiresAt === null ? null : r.expiresAt.getTime()})
        on conflict (client_id) do update set kind = excluded.kind, name = excluded.name, redirect_uris = excluded.redirect_uris,
          created_at = excluded.created_at, expires_at = excluded.expires_at`.execute(this.#db)
    })
  }

  findClientRegistration(clientId: string): Promise<ClientRegistration | null> {
    return read(async () => {
      const [row] = await rows<Row>(
        this.#db,
        sql`select client_id, kind, name, redirect_uris, created_at, expires_at from client_registrations where client_id = ${clientId}`,
      )
      if (!row) return null
      return {
        clientId: row.client_id,
        kind: row.kind,
        name: row.name,
        redirectUris: [...row.redirect_uris],
        createdAt: new Date(ms(row.created_at)),
        expiresAt: row.expires_at === null ? null : new Date(ms(row.expires_at)),
      }
    })
  }
}

import type { ClientRegistration, ClientRegistrationStore } from '@envkeep/env-api-plugin'
import type { SqlRunner } from './dialect.js'
import { DONE } from './access-log-store.js'
import { first, run } from './op.js'
import { date, dateOrNull, fromJson, toJson } from './rows.js'

/** MCP client registrations (client-registration-store.ts in the plugin): table client_registrations. */
export function createClientRegistrationStore(s: SqlRunner): Required<ClientRegistrationStore> {
  const { db } = s.dialect
  return {
    saveClientRegistration: (r) =>
      s.write(function* () {
        const row = {
          client_id: r.clientId,
          kind: r.kind,
          name: r.name,
          redirect_uris: toJson(r.redirectUris),
          created_at: r.createdAt.getTime(),
          expires_at: r.expiresAt === null ? null : r.expiresAt.getTime(),
        }
        const { client_id: _, ...rest } = row
        yield* run(
          db
            .insertInto('client_registrations')
            .values(row)
            .onConflict((oc) => oc.column('client_id').doUpdateSet(rest)),
        )
        return DONE
      }),
    findClientRegistration: (clientId) =>
      s.read(function* () {
        const row = yield* first(db.selectFrom('client_registrations').selectAll().where('client_id', '=', clientId))
        if (!row) return null
        return {
          clientId: row.client_id,
          kind: row.kind,
          name: row.name,
          redirectUris: fromJson<string[]>(row.redirect_uris),
          createdAt: date(row.created_at),
          expiresAt: dateOrNull(row.expires_at),
        } satisfies ClientRegistration
      }),
  }
}

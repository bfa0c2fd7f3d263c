/**
 * The tables of the SQL core (kysely types), one interface per table, grouped
 * by migration. The same names and columns on SQLite and PostgreSQL.
 *
 * Stored formats: times are integer milliseconds since the epoch, booleans
 * 0/1, sealed values BLOBs (read back as Buffer), name lists JSON text.
 */
import type { Generated } from 'kysely'

// 001_vaults

export interface VaultsTable {
  id: string
  name: string
  plan: string
  require_second_person: Generated<number>
  wrapped_key: Uint8Array | null
  created_at: number
}

export interface MembersTable {
  vault_id: string
  person_id: string
  role: 'owner' | 'editor' | 'viewer'
}

export interface EnvironmentsTable {
  vault_id: string
  name: string
  owners_only: number
  /** 007: "Require a second person" */
  second_person: Generated<number>
  version: Generated<number>
  created_at: number
}

export interface VariablesTable {
  vault_id: string
  environment: string
  name: string
  sealed: Uint8Array
  updated_at: number
  updated_by: string | null
}

export interface ImportsTable {
  id: string
  vault_id: string
  environment: string
  sender_id: string
  sign_in_id: string | null
  status: 'pending' | 'applied' | 'rejected' | 'expired'
  /** JSON array of names */
  names: string
  /** JSON array of names */
  overwrites: string
  /** JSON array of names to delete when applied (migration 013) */
  deletes: string
  /** JSON array of {line, name, reason} */
  refused: string
  created_at: number
  expires_at: number
  decided_at: number | null
  decided_by: string | null
  /** 007: why it was rejected */
  reason?: string | null
}

export interface ImportValuesTable {
  import_id: string
  name: string
  sealed: Uint8Array
}

export interface AccessLogTable {
  id: Generated<number>
  vault_id: string
  at: number
  person_id: string | null
  sign_in_id: string | null
  client_id: string | null
  action: string
  environment: string | null
  /** JSON array of variable names, never values */
  names: string
  address: string | null
  /** 004: the member a member_* entry concerns */
  subject: string | null
  /** 004: the role a member_added/member_changed entry gave */
  detail: string | null
}

export interface DB {
  vaults: VaultsTable
  members: MembersTable
  environments: EnvironmentsTable
  variables: VariablesTable
  imports: ImportsTable
  import_values: ImportValuesTable
  access_log: AccessLogTable
}

// 002_oauth: authorization codes, sign-ins and token hashes (oauth-store.ts).
// Only SHA-256 hex hashes of codes and tokens; times in epoch milliseconds.
export interface OAuthCodesTable {
  code_hash: string
  client_id: string
  redirect_uri: string
  code_challenge: string
  resource: string
  /** SQLite: space-separated text; PostgreSQL: a jsonb array (see oauth-store.ts) */
  scopes: string
  person_id: string
  created_at: number
  expires_at: number
  consumed_at: number | null
}

export interface SignInsTable {
  id: string
  person_id: string
  client_id: string
  resource: string
  /** SQLite: space-separated text; PostgreSQL: a jsonb array (see oauth-store.ts) */
  scopes: string
  /** the code it was issued for, so a replayed code finds what it issued */
  code_hash: string | null
  created_at: number
  expires_at: number
  last_used_at: number | null
  revoked_at: number | null
  /** 005: a CI sign-in's identity, subject and run, for the access log */
  label: string | null
}

export interface AccessTokensTable {
  token_hash: string
  sign_in_id: string
  /** SQLite only (PostgreSQL's table has no such column): see oauth-store.ts */
  created_at?: number
  expires_at: number
}

export interface RefreshTokensTable {
  token_hash: string
  sign_in_id: string
  /** SQLite only (PostgreSQL's table has no such column): see oauth-store.ts */
  created_at?: number
  used_at: number | null
}

// Declaration merging: this adds the OAuth tables to DB.
export interface DB {
  oauth_codes: OAuthCodesTable
  sign_ins: SignInsTable
  access_tokens: AccessTokensTable
  refresh_tokens: RefreshTokensTable
}

// 003_accounts: moved to @envkeep/server (src/accounts/), which migrates its own tables.

// 005_ci_identities: sign-in by workload identity (ci-identity-store.ts).
export interface CiIdentitiesTable {
  id: string
  vault_id: string
  name: string
  issuer: string
  audience: string
  subject_pattern: string
  /** JSON object of claim → exact string value */
  required_claims: string
  role: 'editor' | 'owner'
  /** JSON array of environment names, or null for all its role reads */
  environments: string | null
  created_at: number
}

export interface UsedSubjectTokensTable {
  /** SHA-256 hex of the issuer and jti (or of the whole token) */
  key: string
  expires_at: number
}

// Declaration merging: this adds the CI tables to DB.
export interface DB {
  ci_identities: CiIdentitiesTable
  used_subject_tokens: UsedSubjectTokensTable
}

// 006_history

export interface ChangeSetsTable {
  seq: Generated<number>
  id: string
  vault_id: string
  environment: string
  at: number
  by: string | null
  how: 'push' | 'page' | 'admin' | 'revert' | 'restore'
  ref: string | null
}

export interface ChangeEntriesTable {
  change_set_seq: number
  name: string
  kind: 'added' | 'changed' | 'deleted'
  before: Uint8Array | null
  after: Uint8Array | null
}

export interface DB {
  change_sets: ChangeSetsTable
  change_entries: ChangeEntriesTable
}

// 007_vault_admin

export interface AuditLogTable {
  id: Generated<number>
  at: number
  person_id: string | null
  action: 'vault_deleted'
  vault_id: string
  vault_name: string
}

export interface DB {
  audit_log: AuditLogTable
}

// client registrations (SQLite 010, PostgreSQL 007)

export interface ClientRegistrationsTable {
  client_id: string
  kind: 'registered' | 'document'
  name: string
  /** JSON array of URIs */
  redirect_uris: string
  created_at: number
  expires_at: number | null
}

// overrides (SQLite 012, PostgreSQL 009)

export interface OverrideEnvironmentsTable {
  vault_id: string
  environment: string
}

export interface OverridesTable {
  vault_id: string
  environment: string
  name: string
  person_id: string
  sealed: Uint8Array
  updated_at: number
}

export interface DB {
  client_registrations: ClientRegistrationsTable
  override_environments: OverrideEnvironmentsTable
  overrides: OverridesTable
}

// webhooks (SQLite 008, PostgreSQL 005)

export interface WebhooksTable {
  id: string
  vault_id: string
  /** the shown form of the URL (the URL itself is sealed in sealed_secret) */
  url: string
  format: 'generic' | 'slack'
  /** JSON array of events */
  events: string
  sealed_secret: Uint8Array | null
  created_at: number
  created_by: string | null
}

export interface WebhookDeliveriesTable {
  /** SQLite integer, PostgreSQL bigint identity (read as text) */
  id: Generated<number>
  webhook_id: string
  push_id: string
  event: 'push.created' | 'push.decided' | 'push.expired'
  occurred_at: number
  status: 'pending' | 'delivered' | 'failed'
  attempts: number
  next_attempt_at: number | null
  last_attempt_at: number | null
  last_status: number | null
  last_error: string | null
  claim_token: string | null
  claimed_until: number | null
}

// rate counters (PostgreSQL 002 only: SQLite is one process and counts in memory)

export interface RateCountersTable {
  key: string
  window_ms: number
  window_start: number
  count: number
}

export interface DB {
  webhooks: WebhooksTable
  webhook_deliveries: WebhookDeliveriesTable
  rate_counters: RateCountersTable
}

// staged usage (SQLite 015, PostgreSQL 012): per vault, the values staged by its pending
// pushes and their sealed bytes, kept by every write that stages or drops them (import-store.ts)

export interface StagedUsageTable {
  vault_id: string
  /** bigint on PostgreSQL (read as text) */
  values_count: number
  bytes: number
}

export interface DB {
  staged_usage: StagedUsageTable
}

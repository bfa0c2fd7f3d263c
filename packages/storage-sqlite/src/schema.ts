/**
 * Kysely table types. Each store adds its tables here (one interface per
 * table, grouped by migration), then lists them in DB.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface DB {}

// 003_accounts: local accounts of the self-hosting server (account-store.ts)
export interface AccountsTable {
  id: string
  /** unique, case-insensitive (collate nocase) */
  email: string
  name: string
  /** argon2id PHC string */
  password_hash: string
  created_at: string
}

export interface WebSessionsTable {
  /** SHA-256 hex of the session cookie's token */
  token_hash: string
  account_id: string
  created_at: string
  expires_at: string
}

export interface SetupTokensTable {
  /** SHA-256 hex of the one-time setup token */
  token_hash: string
  created_at: string
  expires_at: string
}

// Declaration merging: this adds the account tables to DB.
export interface DB {
  accounts: AccountsTable
  web_sessions: WebSessionsTable
  setup_tokens: SetupTokensTable
}

// 002_oauth: authorization codes, sign-ins and token hashes (oauth-store.ts).
// Timestamps are RFC 3339 UTC strings with milliseconds, so they compare as text.
export interface OAuthCodesTable {
  /** SHA-256 hex of the code */
  code_hash: string
  client_id: string
  redirect_uri: string
  code_challenge: string
  resource: string
  /** space-separated */
  scopes: string
  person_id: string
  created_at: string
  expires_at: string
  consumed_at: string | null
}

export interface SignInsTable {
  id: string
  person_id: string
  client_id: string
  resource: string
  /** space-separated */
  scopes: string
  /** the code it was issued for, so a replayed code finds what it issued */
  code_hash: string | null
  created_at: string
  expires_at: string
  last_used_at: string | null
  revoked_at: string | null
}

export interface AccessTokensTable {
  /** SHA-256 hex of the token */
  token_hash: string
  sign_in_id: string
  created_at: string
  expires_at: string
}

export interface RefreshTokensTable {
  /** SHA-256 hex of the token */
  token_hash: string
  sign_in_id: string
  created_at: string
  used_at: string | null
}

// Declaration merging: this adds the OAuth tables to DB.
export interface DB {
  oauth_codes: OAuthCodesTable
  sign_ins: SignInsTable
  access_tokens: AccessTokensTable
  refresh_tokens: RefreshTokensTable
}

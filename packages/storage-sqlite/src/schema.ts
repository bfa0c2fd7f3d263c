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
// Only SHA-256 hex hashes of codes and tokens; times in epoch milliseconds.
export interface OAuthCodesTable {
  code_hash: string
  client_id: string
  redirect_uri: string
  code_challenge: string
  resource: string
  /** space-separated */
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
  /** space-separated */
  scopes: string
  /** the code it was issued for, so a replayed code finds what it issued */
  code_hash: string | null
  created_at: number
  expires_at: number
  last_used_at: number | null
  revoked_at: number | null
}

export interface AccessTokensTable {
  token_hash: string
  sign_in_id: string
  created_at: number
  expires_at: number
}

export interface RefreshTokensTable {
  token_hash: string
  sign_in_id: string
  created_at: number
  used_at: number | null
}

// Declaration merging: this adds the OAuth tables to DB.
export interface DB {
  oauth_codes: OAuthCodesTable
  sign_ins: SignInsTable
  access_tokens: AccessTokensTable
  refresh_tokens: RefreshTokensTable
}

import { sql, type Kysely } from 'kysely'

/** A second factor of an account (issue 22): an authenticator app (TOTP) or a passkey. */
export interface FactorRecord {
  readonly id: string
  readonly accountId: string
  readonly kind: 'totp' | 'passkey'
  /** what the person called it */
  readonly name: string
  /** TOTP: the secret sealed under the master key (base64); never shown, never logged */
  readonly sealedSecret: string | null
  /** passkey: the credential id (base64url), its public key (base64url), signature counter, transports */
  readonly credentialId: string | null
  readonly publicKey: string | null
  readonly counter: number
  readonly transports: readonly string[]
  readonly createdAt: Date
  readonly lastUsedAt: Date | null
}

export interface NewFactor {
  readonly id: string
  readonly accountId: string
  readonly kind: 'totp' | 'passkey'
  readonly name: string
  readonly sealedSecret?: string
  readonly credentialId?: string
  readonly publicKey?: string
  readonly counter?: number
  readonly transports?: readonly string[]
}

/** A web session as the Account page lists it (never its token). */
export interface SessionInfo {
  /** SHA-256 hex of the cookie's token: names the session in forms (the token cannot be derived from it) */
  readonly tokenHash: string
  readonly createdAt: Date
  readonly expiresAt: Date
  readonly lastUsedAt: Date | null
  readonly userAgent: string | null
  readonly address: string | null
}

export type SigninEventKind =
  | 'signin_succeeded'
  | 'signin_failed'
  | 'factor_added'
  | 'factor_removed'
  | 'factors_reset'
  | 'recovery_code_used'
  | 'link_created'
  | 'break_glass_used'
  | 'password_changed'
  | 'sessions_ended'

export interface SigninEvent {
  readonly id: string
  readonly at: Date
  /** null when no account was found (an unknown email is never stored) */
  readonly accountId: string | null
  readonly event: SigninEventKind
  /** what kind of factor, which way in; never a code, a password or an email typed */
  readonly detail: string | null
  readonly address: string | null
}

/**
 * Second factors, recovery codes, sign-ins waiting for a factor, the sign-in event log and
 * session details: part of the server's account store, in the same database (SQLite or
 * PostgreSQL: the SQL below is portable; times in epoch ms, secrets as text). Codes and
 * tokens arrive only as SHA-256 hex.
 */
export interface FactorStore {
  listFactors(accountId: string): Promise<FactorRecord[]>
  addFactor(factor: NewFactor, now: Date): Promise<FactorRecord>
  /** false when the account has no such factor */
  removeFactor(accountId: string, factorId: string): Promise<boolean>
  /** Records a TOTP time step as used; false when it (or a later one) was used already (a code works once). */
  useTotpStep(factorId: string, step: number, now: Date): Promise<boolean>
  /** A passkey by its credential id, or null. */
  findPasskey(credentialId: string): Promise<FactorRecord | null>
  /** Records a passkey's use and its new signature counter. */
  usePasskey(factorId: string, counter: number, now: Date): Promise<void>
  /** Replaces every recovery code of the account with these hashes. */
  replaceRecoveryCodes(accountId: string, codeHashes: readonly string[]): Promise<void>
  /** Consumes one recovery code; false when unknown or used. */
  useRecoveryCode(accountId: string, codeHash: string): Promise<boolean>
  countRecoveryCodes(accountId: string): Promise<number>
  /** Removes every factor and recovery code of the account; returns how many factors. */
  resetFactors(accountId: string): Promise<number>
  /** Of these accounts, the ids that have at least one factor. */
  accountsWithFactor(accountIds: readonly string[]): Promise<Set<string>>

  createPendingSignin(tokenHash: string, accountId: string, returnTo: string, now: Date, expiresAt: Date): Promise<void>
  /** The live pending sign-in (never consumes), or null. */
  findPendingSignin(tokenHash: string, now: Date): Promise<{ accountId: string; returnTo: string } | null>
  /** Consumes the live pending sign-in; null when unknown, used or expired. */
  takePendingSignin(tokenHash: string, now: Date): Promise<{ accountId: string; returnTo: string } | null>

  /** Stores a WebAuthn challenge handed to a page (`purpose`: register, login, factor). */
  createChallenge(challenge: string, purpose: string, accountId: string | null, now: Date, expiresAt: Date): Promise<void>
  /** Consumes a live challenge of this purpose; its account (or '' when none), or null when unknown, used or expired. */
  takeChallenge(challenge: string, purpose: string, now: Date): Promise<string | null>

  recordSigninEvent(event: SigninEvent): Promise<void>
  /** Newest first. */
  listSigninEvents(limit: number): Promise<SigninEvent[]>

  /** Stores what the Account page shows of a new session. */
  describeSession(tokenHash: string, info: { userAgent: string | null; address: string | null }, now: Date): Promise<void>
  /** Records a session's use (at most once a minute writes). */
  touchSession(tokenHash: string, now: Date): Promise<void>
  /** The live sessions of an account, newest first. */
  listSessionsOf(accountId: string, now: Date): Promise<SessionInfo[]>
  /** Ends one session of this account; false when it has none with this hash. */
  deleteSessionOf(accountId: string, tokenHash: string): Promise<boolean>
  /** Ends every session of the account but `keep`; returns how many. */
  deleteOtherSessions(accountId: string, keep: string | null): Promise<number>
}

interface FactorRow {
  id: string
  account_id: string
  kind: 'totp' | 'passkey'
  name: string
  sealed_secret: string | null
  credential_id: string | null
  public_key: string | null
  counter: number | string
  transports: string | null
  created_at: number | string
  last_used_at: number | string | null
}

function toFactor(r: FactorRow): FactorRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    kind: r.kind,
    name: r.name,
    sealedSecret: r.sealed_secret,
    credentialId: r.credential_id,
    publicKey: r.public_key,
    counter: Number(r.counter),
    transports: r.transports ? r.transports.split(',') : [],
    createdAt: new Date(Number(r.created_at)),
    lastUsedAt: r.last_used_at === null ? null : new Date(Number(r.last_used_at)),
  }
}

const affected = (r: { numAffectedRows?: bigint }) => Number(r.numAffectedRows ?? 0)

/** The factor store over either database; `guard` maps driver failures to StorageError. */
export function sqlFactorStore(db: Kysely<unknown>, guard: <T>(detail: string, work: () => Promise<T>) => Promise<T>): FactorStore {
  const rows = async <T>(q: ReturnType<typeof sql>): Promise<T[]> => (await q.execute(db)).rows as T[]
  return {
    listFactors: (accountId) =>
      guard('account_factors', async () =>
        (await rows<FactorRow>(sql`select * from account_factors where account_id = ${accountId} order by created_at, id`)).map(toFactor),
      ),
    addFactor: (f, now) =>
      guard('account_factors', async () => {
        await sql`insert into account_factors (id, account_id, kind, name, sealed_secret, credential_id, public_key, counter, transports, created_at)
          values (${f.id}, ${f.accountId}, ${f.kind}, ${f.name}, ${f.sealedSecret ?? null}, ${f.credentialId ?? null}, ${f.publicKey ?? null},
            ${f.counter ?? 0}, ${f.transports?.join(',') ?? null}, ${now.getTime()})`.execute(db)
        return toFactor((await rows<FactorRow>(sql`select * from account_factors where id = ${f.id}`))[0]!)
      }),
    removeFactor: (accountId, factorId) =>
      guard(
        'account_factors',
        async () => affected(await sql`delete from account_factors where id = ${factorId} and account_id = ${accountId}`.execute(db)) > 0,
      ),
    useTotpStep: (factorId, step, now) =>
      guard('account_factors', async () => {
        const r = await sql`update account_factors set last_step = ${step}, last_used_at = ${now.getTime()}
          where id = ${factorId} and kind = 'totp' and last_step < ${step}`.execute(db)
        return affected(r) > 0
      }),
    findPasskey: (credentialId) =>
      guard('account_factors', async () => {
        const [r] = await rows<FactorRow>(sql`select * from account_factors where credential_id = ${credentialId} and kind = 'passkey'`)
        return r ? toFactor(r) : null
      }),
    usePasskey: (factorId, counter, now) =>
      guard('account_factors', async () => {
        await sql`update account_factors set counter = ${counter}, last_used_at = ${now.getTime()} where id = ${factorId}`.execute(db)
      }),
    replaceRecoveryCodes: (accountId, hashes) =>
      guard('recovery_codes', () =>
        db.transaction().execute(async (trx) => {
          await sql`delete from recovery_codes where account_id = ${accountId}`.execute(trx)
          for (const h of hashes) await sql`insert into recovery_codes (account_id, code_hash) values (${accountId}, ${h})`.execute(trx)
        }),
      ),
    useRecoveryCode: (accountId, codeHash) =>
      guard(
        'recovery_codes',
        async () => affected(await sql`delete from recovery_codes where account_id = ${accountId} and code_hash = ${codeHash}`.execute(db)) > 0,
      ),
    countRecoveryCodes: (accountId) =>
      guard('recovery_codes', async () =>
        Number((await rows<{ n: number | string }>(sql`select count(*) as n from recovery_codes where account_id = ${accountId}`))[0]!.n),
      ),
    resetFactors: (accountId) =>
      guard('account_factors', () =>
        db.transaction().execute(async (trx) => {
          await sql`delete from recovery_codes where account_id = ${accountId}`.execute(trx)
          return affected(await sql`delete from account_factors where account_id = ${accountId}`.execute(trx))
        }),
      ),
    accountsWithFactor: (ids) =>
      guard('account_factors', async () => {
        if (ids.length === 0) return new Set<string>()
        const found = await rows<{ account_id: string }>(
          sql`select distinct account_id from account_factors where account_id in (${sql.join(ids.map((id) => sql`${id}`))})`,
        )
        return new Set(found.map((r) => r.account_id))
      }),

    createPendingSignin: (tokenHash, accountId, returnTo, now, expiresAt) =>
      guard('pending_signins', async () => {
        await sql`delete from pending_signins where expires_at <= ${now.getTime()}`.execute(db)
        await sql`insert into pending_signins (token_hash, account_id, return_to, created_at, expires_at)
          values (${tokenHash}, ${accountId}, ${returnTo}, ${now.getTime()}, ${expiresAt.getTime()})`.execute(db)
      }),
    findPendingSignin: (tokenHash, now) =>
      guard('pending_signins', async () => {
        const [r] = await rows<{ account_id: string; return_to: string }>(
          sql`select account_id, return_to from pending_signins where token_hash = ${tokenHash} and expires_at > ${now.getTime()}`,
        )
        return r ? { accountId: r.account_id, returnTo: r.return_to } : null
      }),
    takePendingSignin: (tokenHash, now) =>
      guard('pending_signins', async () => {
        const [r] = await rows<{ account_id: string; return_to: string; expires_at: number | string }>(
          sql`delete from pending_signins where token_hash = ${tokenHash} returning account_id, return_to, expires_at`,
        )
        return r && Number(r.expires_at) > now.getTime() ? { accountId: r.account_id, returnTo: r.return_to } : null
      }),

    createChallenge: (challenge, purpose, accountId, now, expiresAt) =>
      guard('webauthn_challenges', async () => {
        await sql`delete from webauthn_challenges where expires_at <= ${now.getTime()}`.execute(db)
        await sql`insert into webauthn_challenges (challenge, purpose, account_id, created_at, expires_at)
          values (${challenge}, ${purpose}, ${accountId}, ${now.getTime()}, ${expiresAt.getTime()})`.execute(db)
      }),
    takeChallenge: (challenge, purpose, now) =>
      guard('webauthn_challenges', async () => {
        const [r] = await rows<{ account_id: string | null; expires_at: number | string }>(
          sql`delete from webauthn_challenges where challenge = ${challenge} and purpose = ${purpose} returning account_id, expires_at`,
        )
        return r && Number(r.expires_at) > now.getTime() ? (r.account_id ?? '') : null
      }),

    recordSigninEvent: (e) =>
      guard('signin_events', async () => {
        await sql`insert into signin_events (id, at, account_id, event, detail, address)
          values (${e.id}, ${e.at.getTime()}, ${e.accountId}, ${e.event}, ${e.detail}, ${e.address})`.execute(db)
      }),
    listSigninEvents: (limit) =>
      guard('signin_events', async () =>
        (
          await rows<{ id: string; at: number | string; account_id: string | null; event: SigninEventKind; detail: string | null; address: string | null }>(
            sql`select * from signin_events order by at desc, id desc limit ${limit}`,
          )
        ).map((r) => ({ id: r.id, at: new Date(Number(r.at)), accountId: r.account_id, event: r.event, detail: r.detail, address: r.address })),
      ),

    describeSession: (tokenHash, info, now) =>
      guard('web_sessions', async () => {
        await sql`update web_sessions set user_agent = ${info.userAgent}, address = ${info.address}, last_used_at = ${now.getTime()}
          where token_hash = ${tokenHash}`.execute(db)
      }),
    touchSession: (tokenHash, now) =>
      guard('web_sessions', async () => {
        const t = now.getTime()
        await sql`update web_sessions set last_used_at = ${t} where token_hash = ${tokenHash} and (last_used_at is null or last_used_at < ${t - 60_000})`.execute(
          db,
        )
      }),
    listSessionsOf: (accountId, now) =>
      guard('web_sessions', async () =>
        (
          await rows<{
            token_hash: string
            created_at: number | string
            expires_at: number | string
            last_used_at: number | string | null
            user_agent: string | null
            address: string | null
          }>(
            sql`select token_hash, created_at, expires_at, last_used_at, user_agent, address from web_sessions
              where account_id = ${accountId} and expires_at > ${now.getTime()} order by created_at desc`,
          )
        ).map((r) => ({
          tokenHash: r.token_hash,
          createdAt: new Date(Number(r.created_at)),
          expiresAt: new Date(Number(r.expires_at)),
          lastUsedAt: r.last_used_at === null ? null : new Date(Number(r.last_used_at)),
          userAgent: r.user_agent,
          address: r.address,
        })),
      ),
    deleteSessionOf: (accountId, tokenHash) =>
      guard(
        'web_sessions',
        async () => affected(await sql`delete from web_sessions where account_id = ${accountId} and token_hash = ${tokenHash}`.execute(db)) > 0,
      ),
    deleteOtherSessions: (accountId, keep) =>
      guard('web_sessions', async () =>
        affected(
          keep === null
            ? await sql`delete from web_sessions where account_id = ${accountId}`.execute(db)
            : await sql`delete from web_sessions where account_id = ${accountId} and token_hash <> ${keep}`.execute(db),
        ),
      ),
  }
}

import type {
  AccessGrant,
  AuthorizationCodeRecord,
  FoundToken,
  IssuedTokens,
  OAuthStore,
  RefreshTokenRecord,
  SignInFilter,
  SignInRecord,
} from '../adapters/oauth-store.js'
import type { ChangeResult } from '../adapters/results.js'
import type { PurgeCuts } from '../adapters/storage.js'
import { StorageError } from '../errors.js'
import type { MemoryDb, SignInRow, State } from './memory-state.js'

/** last use is recorded at most this often per sign-in */
const LAST_USE_GRANULARITY_MS = 60_000

function toSignIn(r: SignInRow): SignInRecord {
  return Object.freeze({
    id: r.id,
    personId: r.personId,
    clientId: r.clientId,
    resource: r.resource,
    scopes: Object.freeze([...r.scopes]),
    createdAt: new Date(r.createdAt),
    expiresAt: new Date(r.expiresAt),
    lastUsedAt: r.lastUsedAt === null ? null : new Date(r.lastUsedAt),
    revokedAt: r.revokedAt === null ? null : new Date(r.revokedAt),
    label: r.label ?? null,
  })
}

export function revoke(s: State, signInId: string, at: number): boolean {
  const r = s.signIns.get(signInId)
  if (!r || r.revokedAt !== null) return false
  s.signIns.set(signInId, Object.freeze({ ...r, revokedAt: at }))
  return true
}

function addTokens(s: State, signInId: string, tokens: IssuedTokens): void {
  if (s.accessTokens.has(tokens.accessTokenHash) || s.refreshTokens.has(tokens.refreshTokenHash)) throw new StorageError('23505', 'tokens')
  s.accessTokens.set(tokens.accessTokenHash, Object.freeze({ signInId, expiresAt: tokens.accessExpiresAt.getTime() }))
  s.refreshTokens.set(tokens.refreshTokenHash, Object.freeze({ signInId, usedAt: null }))
}

/** The reference OAuth store on the same in-memory data as the vault store. */
export class MemoryOAuthStore implements OAuthStore {
  readonly #db: MemoryDb

  constructor(db: MemoryDb) {
    this.#db = db
  }

  saveAuthorizationCode(code: AuthorizationCodeRecord): Promise<ChangeResult<never>> {
    return this.#db.write('oauth_codes', (s): ChangeResult<never> => {
      if (s.codes.has(code.codeHash)) throw new StorageError('23505', 'oauth_codes_pk')
      s.codes.set(code.codeHash, Object.freeze({ ...code, scopes: Object.freeze([...code.scopes]) }))
      return { ok: true, value: undefined }
    })
  }

  findAuthorizationCode(codeHash: string): Promise<AuthorizationCodeRecord | null> {
    return this.#db.read('oauth_codes', (s) => s.codes.get(codeHash) ?? null)
  }

  exchangeAuthorizationCode(
    codeHash: string,
    signIn: Omit<SignInRecord, 'lastUsedAt' | 'revokedAt'>,
    tokens: IssuedTokens,
    now: Date,
  ): Promise<ChangeResult<'replayed' | 'unknown', SignInRecord>> {
    return this.#db.write('oauth_codes', async (s): Promise<ChangeResult<'replayed' | 'unknown', SignInRecord>> => {
      const code = s.codes.get(codeHash)
      if (!code) return { ok: false, reason: 'unknown' }
      await this.#db.step()
      if (code.consumedAt !== null) {
        for (const r of s.signIns.values()) if (r.codeHash === codeHash) revoke(s, r.id, now.getTime())
        return { ok: false, reason: 'replayed' }
      }
      s.codes.set(codeHash, Object.freeze({ ...code, consumedAt: now }))
      if (s.signIns.has(signIn.id)) throw new StorageError('23505', 'sign_ins_pk')
      const row: SignInRow = Object.freeze({
        id: signIn.id,
        personId: signIn.personId,
        clientId: signIn.clientId,
        resource: signIn.resource,
        scopes: Object.freeze([...signIn.scopes]),
        codeHash,
        createdAt: signIn.createdAt.getTime(),
        expiresAt: signIn.expiresAt.getTime(),
        lastUsedAt: now.getTime(),
        revokedAt: null,
      })
      s.signIns.set(row.id, row)
      addTokens(s, row.id, tokens)
      return { ok: true, value: toSignIn(row) }
    })
  }

  findToken<K extends keyof FoundToken>(tokenHash: string, kind: K, now: Date, idleCutoff: Date): Promise<FoundToken[K] | null> {
    const found = kind === 'access' ? this.#findAccessToken(tokenHash, now, idleCutoff) : this.#findRefreshToken(tokenHash)
    return found as Promise<FoundToken[K] | null>
  }

  #findRefreshToken(tokenHash: string): Promise<RefreshTokenRecord | null> {
    return this.#db.read('refresh_tokens', (s) => {
      const t = s.refreshTokens.get(tokenHash)
      const signIn = t ? s.signIns.get(t.signInId) : undefined
      if (!t || !signIn) return null
      return Object.freeze({ tokenHash, signIn: toSignIn(signIn), usedAt: t.usedAt === null ? null : new Date(t.usedAt) })
    })
  }

  rotateRefreshToken(oldHash: string, tokens: IssuedTokens, now: Date): Promise<ChangeResult<'reused' | 'unknown', SignInRecord>> {
    return this.#db.write('refresh_tokens', async (s): Promise<ChangeResult<'reused' | 'unknown', SignInRecord>> => {
      const t = s.refreshTokens.get(oldHash)
      const signIn = t ? s.signIns.get(t.signInId) : undefined
      if (!t || !signIn) return { ok: false, reason: 'unknown' }
      if (signIn.revokedAt !== null || now.getTime() >= signIn.expiresAt) return { ok: false, reason: 'unknown' }
      await this.#db.step()
      if (t.usedAt !== null) {
        revoke(s, signIn.id, now.getTime())
        return { ok: false, reason: 'reused' }
      }
      s.refreshTokens.set(oldHash, Object.freeze({ ...t, usedAt: now.getTime() }))
      addTokens(s, signIn.id, tokens)
      const used: SignInRow = Object.freeze({ ...signIn, lastUsedAt: now.getTime() })
      s.signIns.set(signIn.id, used)
      return { ok: true, value: toSignIn(used) }
    })
  }

  #findAccessToken(tokenHash: string, now: Date, idleCutoff: Date): Promise<AccessGrant | null> {
    return this.#db.write('access_tokens', (s): AccessGrant | null => {
      const t = s.accessTokens.get(tokenHash)
      const signIn = t ? s.signIns.get(t.signInId) : undefined
      if (!t || !signIn) return null
      const at = now.getTime()
      if (signIn.revokedAt !== null || at >= t.expiresAt || at >= signIn.expiresAt) return null
      if ((signIn.lastUsedAt ?? signIn.createdAt) < idleCutoff.getTime()) return null
      let row = signIn
      if (signIn.lastUsedAt === null || at - signIn.lastUsedAt >= LAST_USE_GRANULARITY_MS) {
        row = Object.freeze({ ...signIn, lastUsedAt: at })
        s.signIns.set(row.id, row)
      }
      return Object.freeze({ signIn: toSignIn(row), tokenExpiresAt: new Date(t.expiresAt) })
    })
  }

  listSignIns(personId: string): Promise<SignInRecord[]> {
    return this.#db.read('sign_ins', (s) =>
      [...s.signIns.values()]
        .filter((r) => r.personId === personId)
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .map(toSignIn),
    )
  }

  revokeSignIns(input: SignInFilter, now: Date): Promise<ChangeResult<never, number>> {
    return this.#db.write('sign_ins', (s): ChangeResult<never, number> => {
      if ('tokenHash' in input) {
        const signInId = s.accessTokens.get(input.tokenHash)?.signInId ?? s.refreshTokens.get(input.tokenHash)?.signInId
        const signIn = signInId === undefined ? undefined : s.signIns.get(signInId)
        return { ok: true, value: signIn && signIn.clientId === input.clientId && revoke(s, signIn.id, now.getTime()) ? 1 : 0 }
      }
      let n = 0
      for (const r of [...s.signIns.values()]) {
        if (r.personId === input.personId && (input.signInId === undefined || r.id === input.signInId) && revoke(s, r.id, now.getTime())) n++
      }
      return { ok: true, value: n }
    })
  }

  purgeExpired({ now, codesBefore, signInsBefore, deliveriesBefore }: PurgeCuts): Promise<ChangeResult<never, number>> {
    return this.#db.write('sign_ins', (s): ChangeResult<never, number> => {
      let n = 0
      for (const [id, d] of s.deliveries) if (d.status !== 'pending' && d.occurredAt.getTime() < deliveriesBefore.getTime() && s.deliveries.delete(id)) n++
      for (const [h, c] of s.codes) if (c.expiresAt.getTime() < codesBefore.getTime() && s.codes.delete(h)) n++
      for (const [h, t] of s.accessTokens) if (t.expiresAt < now.getTime() && s.accessTokens.delete(h)) n++
      const cutoff = signInsBefore.getTime()
      const ended = new Set([...s.signIns.values()].filter((r) => (r.revokedAt !== null && r.revokedAt < cutoff) || r.expiresAt < cutoff).map((r) => r.id))
      for (const [h, t] of s.refreshTokens) if (ended.has(t.signInId) && s.refreshTokens.delete(h)) n++
      for (const [h, t] of s.accessTokens) if (ended.has(t.signInId) && s.accessTokens.delete(h)) n++
      for (const id of ended) if (s.signIns.delete(id)) n++
      for (const [k, until] of s.usedSubjectTokens) if (until < now.getTime() && s.usedSubjectTokens.delete(k)) n++
      return { ok: true, value: n }
    })
  }
}

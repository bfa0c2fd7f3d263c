import assert from 'node:assert/strict'
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import type { AuthorizationCodeRecord, IssuedTokens, OAuthStore as OAuthOnly, SignInRecord } from '../adapters/oauth-store.js'
import type { ChangeResult } from '../adapters/results.js'
import type { Storage } from '../adapters/storage.js'

/** The OAuth half with the housekeeping purge (which deletes ended sign-ins and codes). */
type OAuthStore = OAuthOnly & Pick<Storage, 'purgeExpired'>

/** A change's answer in one word, so the cases read as the outcomes they check: 'ok', or why not. */
const why = (r: ChangeResult<string, unknown>): string => (r.ok ? 'ok' : r.reason)

/**
 * The contract every OAuth store must meet, as plain async cases that throw
 * (node:assert) so any runner can drive them:
 *
 * ```ts
 * for (const c of oauthStoreContract) t.test(c.name, () => c.run(makeStore))
 * ```
 *
 * `makeStore` returns a fresh, empty store and a `close` for it.
 */
export interface OAuthStoreFixture {
  readonly store: OAuthStore
  close(): Promise<void>
}

export type MakeOAuthStore = () => Promise<OAuthStoreFixture>

export interface OAuthStoreContractCase {
  readonly name: string
  run(make: MakeOAuthStore): Promise<void>
}

const CLIENT = 'https://envkeep.test/cli/oauth-client.json'
const OTHER_CLIENT = 'https://envkeep.test/mcp/oauth-client.json'
const RESOURCE = 'https://envkeep.test/api/env'
const T0 = new Date('2026-11-21T10:00:00.000Z')
const HOUR = 3_600_000
const DAY = 24 * HOUR

const hash = (): string => createHash('sha256').update(randomBytes(32)).digest('hex')
const at = (ms: number): Date => new Date(T0.getTime() + ms)

function codeRecord(over: Partial<AuthorizationCodeRecord> = {}): AuthorizationCodeRecord {
  return {
    codeHash: hash(),
    clientId: CLIENT,
    redirectUri: 'http://127.0.0.1:53682/callback',
    codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    resource: RESOURCE,
    scopes: ['env:read', 'env:push'],
    personId: 'person-1',
    createdAt: T0,
    expiresAt: at(60_000),
    consumedAt: null,
    ...over,
  }
}

function signInFor(code: AuthorizationCodeRecord, now = T0): Omit<SignInRecord, 'lastUsedAt' | 'revokedAt'> {
  return {
    id: randomUUID(),
    personId: code.personId,
    clientId: code.clientId,
    resource: code.resource,
    scopes: code.scopes,
    createdAt: now,
    expiresAt: new Date(now.getTime() + 365 * DAY),
  }
}

function newTokens(now = T0): IssuedTokens {
  return { accessTokenHash: hash(), accessExpiresAt: new Date(now.getTime() + HOUR), refreshTokenHash: hash() }
}

const farPast = new Date(0)

/** A live sign-in made through a code, with its first tokens. */
async function signedIn(store: OAuthStore, over: Partial<AuthorizationCodeRecord> = {}, now = T0) {
  const code = codeRecord({ createdAt: now, expiresAt: new Date(now.getTime() + 60_000), ...over })
  await store.saveAuthorizationCode(code)
  const tokens = newTokens(now)
  const signIn = signInFor(code, now)
  const r = await store.exchangeAuthorizationCode(code.codeHash, signIn, tokens, now)
  assert.equal(why(r), 'ok')
  return { code, tokens, signIn }
}

async function withStore(make: MakeOAuthStore, fn: (store: OAuthStore) => Promise<void>): Promise<void> {
  const f = await make()
  try {
    await fn(f.store)
  } finally {
    await f.close()
  }
}

export const oauthStoreContract: readonly OAuthStoreContractCase[] = Object.freeze([
  {
    name: 'a saved code reads back as saved; an unknown one is null; reading never consumes',
    run: (make) =>
      withStore(make, async (store) => {
        const code = codeRecord()
        assert.deepEqual(await store.saveAuthorizationCode(code), { ok: true, value: undefined })
        const found = await store.findAuthorizationCode(code.codeHash)
        assert.ok(found)
        assert.deepEqual({ ...found, scopes: [...found.scopes] }, { ...code, scopes: [...code.scopes] })
        assert.equal((await store.findAuthorizationCode(code.codeHash))?.consumedAt, null)
        assert.equal(await store.findAuthorizationCode(hash()), null)
      }),
  },
  {
    name: 'exchanging a code issues a sign-in whose access token resolves; the code is then consumed',
    run: (make) =>
      withStore(make, async (store) => {
        const { code, tokens, signIn } = await signedIn(store)
        const grant = await store.findToken(tokens.accessTokenHash, 'access', at(1000), farPast)
        assert.ok(grant)
        assert.equal(grant.signIn.id, signIn.id)
        assert.equal(grant.signIn.personId, 'person-1')
        assert.equal(grant.signIn.clientId, CLIENT)
        assert.equal(grant.signIn.resource, RESOURCE)
        assert.deepEqual([...grant.signIn.scopes], ['env:read', 'env:push'])
        assert.equal(grant.signIn.revokedAt, null)
        assert.equal(grant.tokenExpiresAt.getTime(), tokens.accessExpiresAt.getTime())
        assert.ok((await store.findAuthorizationCode(code.codeHash))?.consumedAt)
        const rt = await store.findToken(tokens.refreshTokenHash, 'refresh', T0, T0)
        assert.equal(rt?.signIn.id, signIn.id)
        assert.equal(rt?.usedAt, null)
        assert.equal(await store.findToken(tokens.accessTokenHash, 'refresh', T0, T0), null, 'an access token is not a refresh token')
        assert.equal(await store.findToken(tokens.refreshTokenHash, 'access', at(1000), farPast), null, 'a refresh token is not an access token')
      }),
  },
  {
    name: 'an unknown code is unknown, and creates nothing',
    run: (make) =>
      withStore(make, async (store) => {
        const tokens = newTokens()
        const r = await store.exchangeAuthorizationCode(hash(), signInFor(codeRecord()), tokens, T0)
        assert.equal(why(r), 'unknown')
        assert.equal(await store.findToken(tokens.accessTokenHash, 'access', T0, farPast), null)
        assert.deepEqual(await store.listSignIns('person-1'), [])
      }),
  },
  {
    name: 'a replayed code revokes the sign-in it issued, and issues nothing new',
    run: (make) =>
      withStore(make, async (store) => {
        const { code, tokens } = await signedIn(store)
        const again = newTokens()
        const r = await store.exchangeAuthorizationCode(code.codeHash, signInFor(code), again, at(2000))
        assert.equal(why(r), 'replayed')
        assert.equal(await store.findToken(tokens.accessTokenHash, 'access', at(3000), farPast), null)
        assert.equal(await store.findToken(again.accessTokenHash, 'access', at(3000), farPast), null)
        assert.equal(why(await store.rotateRefreshToken(tokens.refreshTokenHash, newTokens(), at(3000))), 'unknown')
        const list = await store.listSignIns('person-1')
        assert.equal(list.length, 1)
        assert.ok(list[0]?.revokedAt)
      }),
  },
  {
    name: 'a code is consumed exactly once under concurrency (50 rounds)',
    run: (make) =>
      withStore(make, async (store) => {
        for (let round = 0; round < 50; round++) {
          const code = codeRecord()
          await store.saveAuthorizationCode(code)
          const a = newTokens()
          const b = newTokens()
          const results = await Promise.all([
            store.exchangeAuthorizationCode(code.codeHash, signInFor(code), a, T0),
            store.exchangeAuthorizationCode(code.codeHash, signInFor(code), b, T0),
          ])
          const outcomes = results.map(why).sort()
          assert.deepEqual(outcomes, ['ok', 'replayed'], `round ${round}`)
        }
        assert.equal((await store.listSignIns('person-1')).length, 50)
      }),
  },
  {
    name: 'a refresh token rotates once; the old one is then used and the new one works',
    run: (make) =>
      withStore(make, async (store) => {
        const { tokens, signIn } = await signedIn(store)
        const next = newTokens(at(HOUR))
        const r = await store.rotateRefreshToken(tokens.refreshTokenHash, next, at(HOUR))
        assert.equal(why(r), 'ok')
        if (r.ok) assert.equal(r.value.id, signIn.id)
        assert.ok((await store.findToken(tokens.refreshTokenHash, 'refresh', T0, T0))?.usedAt)
        assert.equal((await store.findToken(next.refreshTokenHash, 'refresh', T0, T0))?.usedAt, null)
        assert.ok(await store.findToken(next.accessTokenHash, 'access', at(HOUR + 1000), farPast))
        const r2 = await store.rotateRefreshToken(next.refreshTokenHash, newTokens(), at(2 * HOUR))
        assert.equal(why(r2), 'ok')
      }),
  },
  {
    name: 'reusing a used refresh token revokes the whole sign-in',
    run: (make) =>
      withStore(make, async (store) => {
        const { tokens } = await signedIn(store)
        const next = newTokens(at(1000))
        assert.equal(why(await store.rotateRefreshToken(tokens.refreshTokenHash, next, at(1000))), 'ok')
        assert.equal(why(await store.rotateRefreshToken(tokens.refreshTokenHash, newTokens(), at(2000))), 'reused')
        assert.equal(why(await store.rotateRefreshToken(next.refreshTokenHash, newTokens(), at(3000))), 'unknown')
        assert.equal(await store.findToken(next.accessTokenHash, 'access', at(3000), farPast), null)
        assert.equal(await store.findToken(tokens.accessTokenHash, 'access', at(3000), farPast), null)
      }),
  },
  {
    name: 'a refresh token rotates exactly once under concurrency, and the loser revokes the sign-in (50 rounds)',
    run: (make) =>
      withStore(make, async (store) => {
        for (let round = 0; round < 50; round++) {
          const { tokens } = await signedIn(store)
          const a = newTokens(at(1000))
          const b = newTokens(at(1000))
          const results = await Promise.all([
            store.rotateRefreshToken(tokens.refreshTokenHash, a, at(1000)),
            store.rotateRefreshToken(tokens.refreshTokenHash, b, at(1000)),
          ])
          assert.deepEqual(results.map(why).sort(), ['ok', 'reused'], `round ${round}`)
          assert.equal(await store.findToken(a.accessTokenHash, 'access', at(2000), farPast), null, `round ${round}`)
          assert.equal(await store.findToken(b.accessTokenHash, 'access', at(2000), farPast), null, `round ${round}`)
        }
      }),
  },
  {
    name: 'an unknown refresh token, or one of a revoked or ended sign-in, does not rotate',
    run: (make) =>
      withStore(make, async (store) => {
        assert.equal(why(await store.rotateRefreshToken(hash(), newTokens(), T0)), 'unknown')
        const ended = await signedIn(store)
        const late = new Date(ended.signIn.expiresAt.getTime() + 1000)
        assert.equal(why(await store.rotateRefreshToken(ended.tokens.refreshTokenHash, newTokens(late), late)), 'unknown')
        assert.equal((await store.findToken(ended.tokens.refreshTokenHash, 'refresh', T0, T0))?.usedAt, null, 'not consumed')
        const revoked = await signedIn(store)
        assert.deepEqual(await store.revokeSignIns({ personId: 'person-1', signInId: revoked.signIn.id }, at(1000)), { ok: true, value: 1 })
        assert.equal(why(await store.rotateRefreshToken(revoked.tokens.refreshTokenHash, newTokens(), at(2000))), 'unknown')
      }),
  },
  {
    name: 'an access token resolves only while it, its sign-in and its idle window are live',
    run: (make) =>
      withStore(make, async (store) => {
        const { tokens } = await signedIn(store)
        assert.ok(await store.findToken(tokens.accessTokenHash, 'access', at(HOUR - 1), farPast))
        assert.equal(await store.findToken(tokens.accessTokenHash, 'access', at(HOUR), farPast), null, 'expired token')
        assert.equal(await store.findToken(hash(), 'access', at(1000), farPast), null, 'unknown token')
        // idle: last use before the cutoff
        const idle = await signedIn(store)
        assert.equal(await store.findToken(idle.tokens.accessTokenHash, 'access', at(1000), at(2000)), null, 'idle sign-in')
        // a token that outlives its sign-in's absolute end
        const code = codeRecord()
        await store.saveAuthorizationCode(code)
        const long = { ...newTokens(), accessExpiresAt: at(2 * HOUR) }
        const short = { ...signInFor(code), expiresAt: at(HOUR) }
        assert.equal(why(await store.exchangeAuthorizationCode(code.codeHash, short, long, T0)), 'ok')
        assert.ok(await store.findToken(long.accessTokenHash, 'access', at(HOUR - 1), farPast))
        assert.equal(await store.findToken(long.accessTokenHash, 'access', at(HOUR), farPast), null, 'sign-in ended')
      }),
  },
  {
    name: 'revoking by either token ends the sign-in, only for its own client',
    run: (make) =>
      withStore(make, async (store) => {
        const byAccess = await signedIn(store)
        assert.deepEqual(
          await store.revokeSignIns({ tokenHash: byAccess.tokens.accessTokenHash, clientId: OTHER_CLIENT }, at(1000)),
          { ok: true, value: 0 },
          'foreign client',
        )
        assert.ok(await store.findToken(byAccess.tokens.accessTokenHash, 'access', at(1000), farPast), 'still live')
        assert.deepEqual(await store.revokeSignIns({ tokenHash: byAccess.tokens.accessTokenHash, clientId: CLIENT }, at(1000)), { ok: true, value: 1 })
        assert.equal(await store.findToken(byAccess.tokens.accessTokenHash, 'access', at(2000), farPast), null)
        assert.equal(why(await store.rotateRefreshToken(byAccess.tokens.refreshTokenHash, newTokens(), at(2000))), 'unknown')
        assert.deepEqual(
          await store.revokeSignIns({ tokenHash: byAccess.tokens.accessTokenHash, clientId: CLIENT }, at(3000)),
          { ok: true, value: 0 },
          'already revoked',
        )

        const byRefresh = await signedIn(store)
        assert.deepEqual(await store.revokeSignIns({ tokenHash: byRefresh.tokens.refreshTokenHash, clientId: CLIENT }, at(1000)), { ok: true, value: 1 })
        assert.equal(await store.findToken(byRefresh.tokens.accessTokenHash, 'access', at(2000), farPast), null)

        assert.deepEqual(await store.revokeSignIns({ tokenHash: hash(), clientId: CLIENT }, at(1000)), { ok: true, value: 0 }, 'unknown token')
      }),
  },
  {
    name: 'sign-ins of a person list newest first and can be revoked one by one or all at once',
    run: (make) =>
      withStore(make, async (store) => {
        const first = await signedIn(store, {}, T0)
        const second = await signedIn(store, {}, at(DAY))
        await signedIn(store, { personId: 'person-2' }, at(DAY))
        const list = await store.listSignIns('person-1')
        assert.deepEqual(
          list.map((s) => s.id),
          [second.signIn.id, first.signIn.id],
        )
        assert.deepEqual(await store.revokeSignIns({ personId: 'person-2', signInId: first.signIn.id }, at(2 * DAY)), { ok: true, value: 0 }, 'not theirs')
        assert.deepEqual(await store.revokeSignIns({ personId: 'person-1', signInId: first.signIn.id }, at(2 * DAY)), { ok: true, value: 1 })
        assert.deepEqual(await store.revokeSignIns({ personId: 'person-1', signInId: first.signIn.id }, at(2 * DAY)), { ok: true, value: 0 }, 'already revoked')
        assert.deepEqual(await store.revokeSignIns({ personId: 'person-1' }, at(3 * DAY)), { ok: true, value: 1 })
        assert.ok((await store.listSignIns('person-1')).every((s) => s.revokedAt !== null))
        assert.equal((await store.listSignIns('person-2'))[0]?.revokedAt, null)
      }),
  },
  {
    name: 'purgeExpired deletes only what can no longer be used',
    run: (make) =>
      withStore(make, async (store) => {
        const live = await signedIn(store)
        const rotatedTo = newTokens(at(1000))
        assert.equal(why(await store.rotateRefreshToken(live.tokens.refreshTokenHash, rotatedTo, at(1000))), 'ok')
        const revoked = await signedIn(store)
        await store.revokeSignIns({ personId: 'person-1', signInId: revoked.signIn.id }, at(2000))
        const pending = codeRecord({ expiresAt: at(10 * DAY) })
        await store.saveAuthorizationCode(pending)

        const now = at(2 * HOUR)
        const removed = await store.purgeExpired({ now, codesBefore: at(DAY), signInsBefore: at(HOUR), deliveriesBefore: at(0) })
        assert.ok(removed.ok && removed.value > 0, 'something went')
        // the revoked sign-in ended before the cutoff: gone with its tokens
        assert.deepEqual(
          (await store.listSignIns('person-1')).map((s) => s.id),
          [live.signIn.id],
        )
        assert.equal(await store.findToken(revoked.tokens.refreshTokenHash, 'refresh', T0, T0), null)
        // the live sign-in keeps its used refresh token (reuse detection) and its newest pair
        assert.ok(await store.findToken(live.tokens.refreshTokenHash, 'refresh', T0, T0), 'used refresh token kept')
        assert.equal(why(await store.rotateRefreshToken(live.tokens.refreshTokenHash, newTokens(), now)), 'reused', 'reuse still detected')
        // codes: the unexpired one stays, the consumed ones expired before the cutoff went
        assert.ok(await store.findAuthorizationCode(pending.codeHash))
        assert.equal(await store.findAuthorizationCode(live.code.codeHash), null)
      }),
  },
])

import assert from 'node:assert/strict'
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import type { NewCiIdentity, NewCiSignIn } from '../adapters/ci-identity-store.js'
import type { Storage } from '../adapters/storage.js'
import type { ChangeResult } from '../adapters/results.js'
import { testLogEntry } from './log-entry.js'

/** A change's answer in one word: 'ok', or why not. */
const why = (r: ChangeResult<string, unknown>): string => (r.ok ? 'ok' : r.reason)

/**
 * The contract of the CI-identity part of storage, as plain async cases
 * that throw (node:assert), like `oauthStoreContract`:
 *
 * ```ts
 * for (const c of ciIdentityStoreContract) t.test(c.name, () => c.run(makeStorage))
 * ```
 *
 * `make` returns a fresh, empty storage (the whole contract: CI identities
 * refer to vaults, and their sign-ins are found like any other).
 */
export interface CiIdentityStoreFixture {
  readonly store: Storage
  close(): Promise<void>
}

export type MakeCiIdentityStorage = () => Promise<CiIdentityStoreFixture>

export interface CiIdentityStoreContractCase {
  readonly name: string
  run(make: MakeCiIdentityStorage): Promise<void>
}

const CLIENT = 'https://envkeep.test/cli/oauth-client.json'
const RESOURCE = 'https://envkeep.test/api/env'
const ISSUER = 'https://token.actions.githubusercontent.com'
const T0 = new Date('2026-11-21T10:00:00.000Z')
const at = (ms: number): Date => new Date(T0.getTime() + ms)
const hash = (): string => createHash('sha256').update(randomBytes(32)).digest('hex')

async function withStorage(make: MakeCiIdentityStorage, fn: (s: Storage, vaultId: string) => Promise<void>): Promise<void> {
  const f = await make()
  try {
    const vaultId = randomUUID()
    await f.store.createVault(
      { id: vaultId, name: 'shop', ownerId: 'owner-1', plan: 'self-hosted', environments: [{ name: 'development', ownersOnly: false }], now: T0 },
      testLogEntry({ vaultId, action: 'vault_created', at: T0 }),
    )
    await fn(f.store, vaultId)
  } finally {
    await f.close()
  }
}

function identity(vaultId: string, over: Partial<NewCiIdentity> = {}): NewCiIdentity {
  return {
    id: randomUUID(),
    vaultId,
    name: 'deploy',
    issuer: ISSUER,
    audience: 'https://envkeep.test',
    subjectPattern: 'repo:acme/shop:*',
    requiredClaims: { ref: 'refs/heads/main' },
    role: 'editor',
    environments: ['development'],
    now: T0,
    ...over,
  }
}

function ciSignIn(identityId: string, over: Partial<NewCiSignIn> = {}): NewCiSignIn {
  return {
    signIn: {
      id: randomUUID(),
      personId: `ci:${identityId}`,
      clientId: CLIENT,
      resource: RESOURCE,
      scopes: ['env:read'],
      createdAt: T0,
      expiresAt: at(600_000),
      label: 'deploy: sub=repo:acme/shop:ref:refs/heads/main run_id=42',
    },
    accessTokenHash: hash(),
    subjectTokenKey: hash(),
    subjectTokenExpiresAt: at(660_000),
    ...over,
  }
}

const added = (vaultId: string, id: string) => testLogEntry({ vaultId, action: 'member_added', at: T0, subject: `ci:${id}`, detail: 'editor' })

export const ciIdentityStoreContract: readonly CiIdentityStoreContractCase[] = Object.freeze([
  {
    name: 'changeCiIdentity (create): stored as given, found by vault, id and issuer, and logged in the same call',
    run: (make) =>
      withStorage(make, async (s, vaultId) => {
        const input = identity(vaultId)
        const r = await s.changeCiIdentity({ kind: 'create', identity: input }, added(vaultId, input.id))
        assert.equal(r.ok, true)
        const want = {
          id: input.id,
          vaultId,
          name: 'deploy',
          issuer: ISSUER,
          audience: 'https://envkeep.test',
          subjectPattern: 'repo:acme/shop:*',
          requiredClaims: { ref: 'refs/heads/main' },
          role: 'editor',
          environments: ['development'],
          createdAt: T0,
        }
        assert.deepEqual({ ...(r.ok ? r.value : {}) }, want)
        assert.deepEqual({ ...(await s.findCiIdentities({ id: input.id }))[0] }, want)
        assert.deepEqual(
          (await s.findCiIdentities({ vaultId })).map((i) => i.id),
          [input.id],
        )
        assert.deepEqual(
          (await s.findCiIdentities({ issuer: ISSUER })).map((i) => i.id),
          [input.id],
        )
        assert.deepEqual(await s.findCiIdentities({ issuer: `${ISSUER}/` }), [], 'the issuer is matched exactly')
        assert.deepEqual(await s.findCiIdentities({ id: randomUUID() }), [])
        const log = await s.listAccessLog(vaultId, { limit: 10 })
        assert.equal(log[0]?.action, 'member_added')
        assert.equal(log[0]?.subject, `ci:${input.id}`)
        const unrestricted = identity(vaultId, { name: 'all-envs', environments: null, requiredClaims: {} })
        const r2 = await s.changeCiIdentity({ kind: 'create', identity: unrestricted }, added(vaultId, unrestricted.id))
        assert.equal(r2.ok && r2.value.environments, null)
        assert.deepEqual(r2.ok && { ...r2.value.requiredClaims }, {})
        assert.deepEqual(
          (await s.findCiIdentities({ vaultId })).map((i) => i.name),
          ['all-envs', 'deploy'],
          'in name order',
        )
      }),
  },
  {
    name: 'changeCiIdentity (create): a name is unique per vault, case-insensitively; nothing written or logged when taken; not_found for no vault',
    run: (make) =>
      withStorage(make, async (s, vaultId) => {
        const first = identity(vaultId)
        await s.changeCiIdentity({ kind: 'create', identity: first }, added(vaultId, first.id))
        const logBefore = (await s.listAccessLog(vaultId, { limit: 100 })).length
        const again = identity(vaultId, { name: 'DEPLOY' })
        assert.deepEqual(await s.changeCiIdentity({ kind: 'create', identity: again }, added(vaultId, again.id)), { ok: false, reason: 'name_taken' })
        assert.deepEqual(await s.findCiIdentities({ id: again.id }), [])
        assert.equal((await s.listAccessLog(vaultId, { limit: 100 })).length, logBefore)
        const unknownVault = randomUUID()
        assert.deepEqual(await s.changeCiIdentity({ kind: 'create', identity: identity(unknownVault) }, added(unknownVault, 'x')), {
          ok: false,
          reason: 'not_found',
        })
      }),
  },
  {
    name: 'issueCiSignIn: the access token resolves to a CI sign-in with its label; the same identity token is refused the second time',
    run: (make) =>
      withStorage(make, async (s, vaultId) => {
        const input = identity(vaultId)
        await s.changeCiIdentity({ kind: 'create', identity: input }, added(vaultId, input.id))
        const first = ciSignIn(input.id)
        assert.equal(why(await s.issueCiSignIn(first)), 'ok')
        const grant = await s.findToken(first.accessTokenHash, 'access', at(1000), T0)
        assert.ok(grant)
        assert.equal(grant.signIn.personId, `ci:${input.id}`)
        assert.deepEqual([...grant.signIn.scopes], ['env:read'])
        assert.equal(grant.signIn.label, first.signIn.label)
        assert.equal(grant.tokenExpiresAt.getTime(), first.signIn.expiresAt.getTime())
        const replay = ciSignIn(input.id, { subjectTokenKey: first.subjectTokenKey })
        assert.equal(why(await s.issueCiSignIn(replay)), 'replayed')
        assert.equal(await s.findToken(replay.accessTokenHash, 'access', at(1000), T0), null, 'a replay creates no token')
        assert.equal(await s.findToken(first.accessTokenHash, 'access', at(600_000), T0), null, 'the token ends at its expiry')
      }),
  },
  {
    name: 'issueCiSignIn: under concurrency exactly one exchange of an identity token wins',
    run: (make) =>
      withStorage(make, async (s, vaultId) => {
        const input = identity(vaultId)
        await s.changeCiIdentity({ kind: 'create', identity: input }, added(vaultId, input.id))
        const key = hash()
        const tries = Array.from({ length: 8 }, () => ciSignIn(input.id, { subjectTokenKey: key }))
        const outcomes = await Promise.all(tries.map((x) => s.issueCiSignIn(x)))
        assert.equal(outcomes.filter((o) => o.ok).length, 1)
        const live = await Promise.all(tries.map((x) => s.findToken(x.accessTokenHash, 'access', at(1000), T0)))
        assert.equal(live.filter(Boolean).length, 1)
      }),
  },
  {
    name: 'changeCiIdentity (remove): gone from every list, its live tokens stop at once, logged; a second removal or another vault is not_found',
    run: (make) =>
      withStorage(make, async (s, vaultId) => {
        const input = identity(vaultId)
        await s.changeCiIdentity({ kind: 'create', identity: input }, added(vaultId, input.id))
        const signIn = ciSignIn(input.id)
        await s.issueCiSignIn(signIn)
        const otherVault = randomUUID()
        assert.equal(
          why(
            await s.changeCiIdentity({ kind: 'remove', vaultId: otherVault, id: input.id, now: at(1000) }, testLogEntry({ vaultId, action: 'member_removed' })),
          ),
          'not_found',
          'an identity is removed only through its own vault',
        )
        assert.ok(await s.findToken(signIn.accessTokenHash, 'access', at(1000), T0))
        const removal = testLogEntry({ vaultId, action: 'member_removed', at: at(2000), subject: `ci:${input.id}` })
        assert.equal(why(await s.changeCiIdentity({ kind: 'remove', vaultId, id: input.id, now: at(2000) }, removal)), 'ok')
        assert.equal(await s.findToken(signIn.accessTokenHash, 'access', at(3000), T0), null, 'its token is refused at once')
        assert.deepEqual(await s.findCiIdentities({ id: input.id }), [])
        assert.deepEqual(await s.findCiIdentities({ vaultId }), [])
        assert.deepEqual(await s.findCiIdentities({ issuer: ISSUER }), [])
        const log = await s.listAccessLog(vaultId, { limit: 10 })
        assert.equal(log[0]?.action, 'member_removed')
        assert.equal(log[0]?.subject, `ci:${input.id}`)
        assert.equal(why(await s.changeCiIdentity({ kind: 'remove', vaultId, id: input.id, now: at(3000) }, removal)), 'not_found')
        assert.equal((await s.listAccessLog(vaultId, { limit: 10 })).length, log.length, 'nothing logged when nothing was removed')
      }),
  },
  {
    name: 'purgeExpired: an exchanged identity token is remembered until its expiry',
    run: (make) =>
      withStorage(make, async (s, vaultId) => {
        const input = identity(vaultId)
        await s.changeCiIdentity({ kind: 'create', identity: input }, added(vaultId, input.id))
        const first = ciSignIn(input.id)
        await s.issueCiSignIn(first)
        await s.purgeExpired({ now: at(60_000), codesBefore: at(0), signInsBefore: at(0), deliveriesBefore: at(0) })
        assert.equal(why(await s.issueCiSignIn(ciSignIn(input.id, { subjectTokenKey: first.subjectTokenKey }))), 'replayed', 'kept before its expiry')
        await s.purgeExpired({ now: at(661_000), codesBefore: at(0), signInsBefore: at(0), deliveriesBefore: at(0) })
        assert.equal(why(await s.issueCiSignIn(ciSignIn(input.id, { subjectTokenKey: first.subjectTokenKey }))), 'ok', 'forgotten after it')
      }),
  },
])

import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { createVaultCrypto, type AccessLogEntry, type Keyring, type Storage } from '@envkeep/env-api-plugin'
import { testLogEntry } from '@envkeep/env-api-plugin/testing'
import { BENCH_PLANS, CLI_CLIENT, RESOURCE, stackPackage } from './settings.js'

export { BASE_URL, BENCH_PLANS, BENCH_RATE_LIMIT, CLI_CLIENT, RESOURCE, stackPackage } from './settings.js'

export const READ_SIZES = [1, 30, 300, 3000, 10_000] as const
export const MANY_VAULTS = 1000
export const MANY_SIGN_INS = 1000

export interface Seeded {
  /** vault id per variable count; each has that many variables in `development` */
  readVaults: Record<number, string>
  /** the vault pushes go to (30 variables already, so a push reports overwrites) */
  pushVault: string
  /** access tokens of the owner of every vault above */
  ownerToken: string
  /** a person in MANY_VAULTS vaults */
  manyVaultsToken: string
  /** MANY_SIGN_INS sign-ins of the owner, for round-robin */
  signInTokens: string[]
}

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex')

/** ~40 bytes of printable value. */
export function value40(): string {
  return randomBytes(30).toString('base64url')
}

export function varName(prefix: string, i: number): string {
  return `${prefix}_${String(i).padStart(5, '0')}`
}

/**
 * A CLI sign-in minted the way the token endpoint does it: an authorization
 * code saved as by the consent step, then exchanged atomically by
 * `exchangeAuthorizationCode`, with an `ekat_` access token whose SHA-256
 * alone is stored. Returns the access token.
 */
async function mintSignIn(storage: Storage, personId: string, now: Date): Promise<string> {
  const code = randomBytes(32).toString('base64url')
  const codeHash = sha256(code)
  const scopes = ['env:read', 'env:push']
  await storage.saveAuthorizationCode({
    codeHash,
    clientId: CLI_CLIENT,
    redirectUri: 'http://127.0.0.1:53682/callback',
    codeChallenge: randomBytes(32).toString('base64url'),
    resource: RESOURCE,
    scopes,
    personId,
    createdAt: now,
    expiresAt: new Date(now.getTime() + 60_000),
    consumedAt: null,
  })
  const access = `ekat_${randomBytes(32).toString('base64url')}`
  const refresh = `ekrt_${randomBytes(32).toString('base64url')}`
  const r = await storage.exchangeAuthorizationCode(
    codeHash,
    {
      id: randomUUID(),
      personId,
      clientId: CLI_CLIENT,
      resource: RESOURCE,
      scopes,
      createdAt: now,
      expiresAt: new Date(now.getTime() + 365 * 86_400_000),
    },
    { accessTokenHash: sha256(access), accessExpiresAt: new Date(now.getTime() + 3_600_000), refreshTokenHash: sha256(refresh) },
    now,
  )
  if (!r.ok) throw new Error(`bench: sign-in was not issued (${r.reason})`)
  return access
}

const ENVIRONMENTS = [
  { name: 'development', ownersOnly: false },
  { name: 'preview', ownersOnly: false },
  { name: 'production', ownersOnly: true },
]

/**
 * Fills a fresh database: vaults with 1 … 10,000 variables (sealed with the
 * plugin's own vault crypto, written by applying a push, as a person would),
 * a person in 1,000 vaults, and the sign-ins. Closes the storage.
 */
/** The bench's storage: a SQLite file, or PostgreSQL when the target is a postgres:// URL (BENCH_DATABASE=postgres). */
export async function openBenchStorage(target: string): Promise<Storage & { close(): Promise<void> }> {
  if (/^postgres(ql)?:\/\//.test(target)) {
    const { createPostgresStorage } = await stackPackage<typeof import('@envkeep/storage-postgres')>('@envkeep/storage-postgres', 'storage-postgres')
    return createPostgresStorage({ connectionString: target, pool: 10 })
  }
  const { createSqliteStorage } = await stackPackage<typeof import('@envkeep/storage-sqlite')>('@envkeep/storage-sqlite', 'storage-sqlite')
  return createSqliteStorage({ filename: target })
}

export async function seed(filename: string, keyring: Keyring): Promise<Seeded> {
  const storage = await openBenchStorage(filename)
  try {
    const crypto = createVaultCrypto(storage, keyring)
    const now = new Date()
    const owner = 'bench-owner'
    const log = (vaultId: string, action: AccessLogEntry['action'], names: string[]): AccessLogEntry => ({
      vaultId,
      at: now,
      personId: owner,
      signInId: null,
      clientId: null,
      action,
      environment: 'development',
      names,
      subject: null,
      detail: null,
      address: null,
    })

    async function vaultWith(name: string, count: number): Promise<string> {
      const id = randomUUID()
      await storage.createVault(
        { id, name, ownerId: owner, plan: 'self-hosted', environments: ENVIRONMENTS, now },
        testLogEntry({ vaultId: id, action: 'vault_created' }),
      )
      if (count === 0) return id
      const values: Record<string, string> = {}
      for (let i = 0; i < count; i++) values[varName('VAR', i)] = value40()
      const sealed = await crypto.sealValues(id, 'development', values)
      const importId = randomUUID()
      const created = await storage.createImport(
        {
          id: importId,
          vaultId: id,
          environment: 'development',
          senderId: owner,
          signInId: null,
          values: sealed,
          refused: [],
          createdAt: now,
          expiresAt: new Date(now.getTime() + 86_400_000),
          limit: BENCH_PLANS['self-hosted'],
        },
        log(id, 'push_created', Object.keys(values)),
      )
      if (!created.ok) throw new Error('bench: seeding push refused')
      const applied = await storage.decideImport({ importId: importId, decision: 'applied', by: owner, now: now }, log(id, 'push_applied', Object.keys(values)))
      if (!applied.ok) throw new Error('bench: seeding push not applied')
      return id
    }

    const readVaults: Record<number, string> = {}
    for (const n of READ_SIZES) readVaults[n] = await vaultWith(`read-${n}`, n)
    const pushVault = await vaultWith('push-target', 30)

    const many = 'bench-many-vaults'
    for (let i = 0; i < MANY_VAULTS; i++) {
      const id = randomUUID()
      await storage.createVault(
        { id, name: `team-${String(i).padStart(4, '0')}`, ownerId: owner, plan: 'self-hosted', environments: ENVIRONMENTS, now },
        testLogEntry({ vaultId: id, action: 'vault_created' }),
      )
      await storage.changeMember(
        { kind: 'set', vaultId: id, personId: many, role: i % 3 === 0 ? 'owner' : i % 3 === 1 ? 'editor' : 'viewer' },
        testLogEntry({ vaultId: id, action: 'member_added', subject: many, detail: i % 3 === 0 ? 'owner' : i % 3 === 1 ? 'editor' : 'viewer' }),
      )
    }

    const ownerToken = await mintSignIn(storage, owner, now)
    const manyVaultsToken = await mintSignIn(storage, many, now)
    const signInTokens: string[] = []
    for (let i = 0; i < MANY_SIGN_INS; i++) signInTokens.push(await mintSignIn(storage, owner, now))
    return { readVaults, pushVault, ownerToken, manyVaultsToken, signInTokens }
  } finally {
    await storage.close()
  }
}

/**
 * Embedding envkeep in an existing Fastify app ("Acme"), with Acme's own
 * users and sessions as envkeep's people and SQLite as its storage.
 *
 *   pnpm build && node --import tsx examples/embed.ts
 *
 * Environment: PORT (3000), ACME_BASE_URL (http://127.0.0.1:<PORT>),
 * ACME_DB (./acme-envkeep.db), ACME_ENVKEEP_KEY (32 bytes, base64url; without
 * it the value routes answer 503 not_configured). Sign in as
 * `ada@acme.example` / `correct horse` with POST /login.
 */
import { randomBytes, scryptSync, timingSafeEqual } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import envkeep, { createLocalKeyring, type Keyring, type PeopleAdapter, type Person } from '@envkeep/env-api-plugin'
import { createSqliteStorage, type SqliteStorage } from '@envkeep/storage-sqlite'

export interface AcmeOptions {
  /** public URL of envkeep inside the app: a path of its own keeps envkeep's pages off the app's `/` */
  baseUrl: string
  databaseFile: string
  masterKey: Uint8Array | null
  logger?: boolean
}

export interface Acme {
  app: FastifyInstance
  storage: SqliteStorage
  users: AcmeUsers
}

// ---- Acme's own users and sessions (whatever the app already has) --------

interface AcmeUser extends Person {
  readonly salt: Buffer
  readonly passwordHash: Buffer
}

export interface AcmeUsers {
  add(email: string, name: string, password: string): Person
  verify(email: string, password: string): Person | null
  byId(id: string): Person | null
  byEmail(email: string): Person | null
}

function createAcmeUsers(): AcmeUsers {
  const users = new Map<string, AcmeUser>()
  const hash = (password: string, salt: Buffer) => scryptSync(password, salt, 32)
  const pub = (u: AcmeUser): Person => ({ id: u.id, email: u.email, name: u.name })
  return {
    add(email, name, password) {
      const salt = randomBytes(16)
      const u = { id: `acme-${randomBytes(6).toString('hex')}`, email: email.toLowerCase(), name, salt, passwordHash: hash(password, salt) }
      users.set(u.id, u)
      return pub(u)
    },
    verify(email, password) {
      const u = [...users.values()].find((x) => x.email === email.toLowerCase())
      if (!u) return null
      return timingSafeEqual(hash(password, u.salt), u.passwordHash) ? pub(u) : null
    },
    byId: (id) => {
      const u = users.get(id)
      return u ? pub(u) : null
    },
    byEmail: (email) => {
      const u = [...users.values()].find((x) => x.email === email.toLowerCase())
      return u ? pub(u) : null
    },
  }
}

const SESSION_COOKIE = 'acme_session'

function sessionId(request: FastifyRequest): string | null {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [k, v] = part.trim().split('=')
    if (k === SESSION_COOKIE && v) return v
  }
  return null
}

// ---- the app ----------------------------------------------------------------

export async function buildAcmeApp(o: AcmeOptions): Promise<Acme> {
  const users = createAcmeUsers()
  const sessions = new Map<string, string>() // session id → user id
  const app = Fastify({ logger: o.logger ?? false })

  // Acme's existing routes stay as they are.
  app.get('/health', async () => ({ ok: true }))
  app.post<{ Body: { email?: unknown; password?: unknown } }>('/login', async (request, reply) => {
    const { email, password } = request.body ?? {}
    const person = typeof email === 'string' && typeof password === 'string' ? users.verify(email, password) : null
    if (!person) return reply.code(401).send({ error: 'wrong email or password' })
    const id = randomBytes(24).toString('base64url')
    sessions.set(id, person.id)
    const secure = o.baseUrl.startsWith('https:') ? '; Secure' : ''
    reply.header('set-cookie', `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Lax${secure}`)
    return { signedIn: person.email }
  })

  // envkeep sees Acme's people through this adapter.
  const people: PeopleAdapter = {
    async currentPerson(request) {
      const sid = sessionId(request)
      const userId = sid ? sessions.get(sid) : undefined
      return userId ? users.byId(userId) : null
    },
    signInUrl: (returnTo) => `/login-page?return_to=${encodeURIComponent(returnTo)}`,
    // the pages' CSRF tokens are bound to the session, so a planted cookie yields no token
    sessionBinding: (request) => sessionId(request),
    getPerson: async (id) => users.byId(id),
    findPersonByEmail: async (email) => users.byEmail(email),
  }

  const storage = await createSqliteStorage({ filename: o.databaseFile })
  const keyring: Keyring | null = o.masterKey ? createLocalKeyring(o.masterKey) : null
  await app.register(envkeep, { baseUrl: o.baseUrl, storage, keyring, people })
  // The plugin closes what it opens; the storage is ours to close.
  app.addHook('onClose', async () => storage.close())
  return { app, storage, users }
}

// ---- run it -------------------------------------------------------------------

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const port = Number(process.env.PORT ?? 3000)
  const key = process.env.ACME_ENVKEEP_KEY ? Buffer.from(process.env.ACME_ENVKEEP_KEY, 'base64url') : null
  const { app, users } = await buildAcmeApp({
    baseUrl: process.env.ACME_BASE_URL ?? `http://127.0.0.1:${port}/envkeep`,
    databaseFile: process.env.ACME_DB ?? './acme-envkeep.db',
    masterKey: key,
    logger: true,
  })
  users.add('ada@acme.example', 'Ada', 'correct horse')
  await app.listen({ host: '127.0.0.1', port })
  if (!key) app.log.warn('no ACME_ENVKEEP_KEY: envkeep value routes answer 503 not_configured')
}

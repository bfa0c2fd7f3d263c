import { randomBytes } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import type { Keyring } from './adapters/keyring.js'
import type { AccessLogEntry, SealedVariable, Storage, VaultSecrets } from './adapters/storage.js'
import { fail } from './domain/failure.js'
import { AGAIN, retryOptimistic } from './domain/retry.js'
import { StorageError } from './errors.js'
import {
  historyPlaceOf,
  open,
  openText,
  overridePlaceOf,
  placeOf,
  placesIn,
  reseal,
  seal,
  sealText,
  sealTexts,
  snapshotPlaceOf,
  webhookPlaceOf,
} from './crypto/seal.js'
import { wipe } from './crypto/wipe.js'
import { isReferenceForm } from './domain/rules.js'

/** Name and value rules live in the domain layer (domain/rules.ts); re-exported for existing imports. */
export { MAX_NAME_LENGTH, MAX_VALUE_BYTES, NAME_RE, nameProblem, RESERVED_PREFIX, valueProblem } from './domain/rules.js'

export interface VaultCrypto {
  /** Seals plaintext values for a vault's environment (creating the vault's data key on first use). */
  sealValues(vaultId: string, environment: string, values: Readonly<Record<string, string>>): Promise<SealedVariable[]>
  /**
   * The same, with the wrapped data key they were sealed under: pass it to
   * storage (`sealedUnder`), which refuses the write if the vault's data key
   * was rotated meanwhile; then `forget` the vault and seal again.
   */
  seal(vaultId: string, environment: string, values: Readonly<Record<string, string>>): Promise<{ values: SealedVariable[]; sealedUnder: Uint8Array }>
  /** Drops the vault's cached data key (every vault's, without one): the next use reads the stored wrap again. */
  forget(vaultId?: string): void
  /** Opens sealed values, keyed by name in the order given; throws DomainFailure decrypt_failed if any one fails (nothing is returned). */
  openValues(vaultId: string, environment: string, sealed: readonly SealedVariable[]): Promise<Record<string, string>>
  /**
   * The same values as `openValues`, as the JSON text of that object (UTF-8, in the order
   * given), and whether any of them is stored in reference form (leads with NUL): what the
   * API's read answers without building the object (an environment's snapshot opens to it).
   */
  openValuesJson(vaultId: string, environment: string, sealed: readonly SealedVariable[]): Promise<OpenedJson>
  /** Seals one change set's values for history (historyPlaceOf): each name's value before and after (null: none). */
  sealHistory(vaultId: string, environment: string, changeSetId: string, entries: readonly HistoryValues[]): Promise<SealedHistory[]>
  /**
   * Opens one side of history entries of one change set; throws DomainFailure
   * decrypt_failed if any fails (nothing is returned). A null side opens to null; a
   * value recorded as unreadable (zero bytes) is left out.
   */
  openHistory(
    vaultId: string,
    environment: string,
    changeSetId: string,
    side: 'before' | 'after',
    entries: readonly SealedHistory[],
  ): Promise<Record<string, string | null>>
  /** Seals a person's override of one variable (overridePlaceOf), creating the vault's data key on first use. */
  sealOverride(vaultId: string, environment: string, name: string, personId: string, value: string): Promise<Uint8Array>
  /** Opens a person's overrides of one environment, keyed by name; throws DomainFailure decrypt_failed if any fails. */
  openOverrides(vaultId: string, environment: string, personId: string, rows: readonly { name: string; sealed: Uint8Array }[]): Promise<Record<string, string>>
  /** Seals a webhook's signing secret (webhookPlaceOf), creating the vault's data key on first use. */
  sealWebhookSecret(vaultId: string, webhookId: string, secret: string): Promise<Uint8Array>
  /** Opens a webhook's signing secret; throws DomainFailure decrypt_failed when it does not open. */
  openWebhookSecret(vaultId: string, webhookId: string, sealed: Uint8Array): Promise<string>
  /** A new data key for the vault, every sealed value of it sealed again (rotateDataKey); false when it has no key yet. */
  rotateDataKey(vaultId: string): Promise<boolean>
}

export interface OpenedJson {
  /** the JSON text of `{ name: value }`, UTF-8 */
  readonly json: Buffer
  /** whether some value is stored in reference form (domain/references.ts): the text is not the answer then */
  readonly mayRefer: boolean
}

export interface HistoryValues {
  readonly name: string
  readonly before: string | null
  readonly after: string | null
}

export interface SealedHistory {
  readonly name: string
  readonly before: Uint8Array | null
  readonly after: Uint8Array | null
}

export interface VaultCryptoOptions {
  /** how many vaults' unwrapped data keys to keep (least recently used dropped); default 10,000 */
  readonly maxKeys?: number
  /** bound of the sealed environment snapshots kept, in bytes (least recently used dropped); default 16 MiB, 0 for none */
  readonly maxSnapshotBytes?: number
}

/**
 * An environment's values sealed together under its vault's data key (one
 * AES-256-GCM ciphertext, `snapshotPlaceOf`), with the exact sealed rows they
 * were opened from and the key buffer that sealed them. Valid only for those
 * same row objects: storage's cache answers them until a change empties it,
 * and any other answer (a re-read, a change, a rotated key) builds a new one.
 */
interface Snapshot {
  readonly key: Uint8Array
  readonly place: Buffer
  readonly mayRefer: boolean
  readonly rows: readonly SealedVariable[]
  readonly sealed: Buffer
  readonly bytes: number
}

const SNAPSHOT_ROW_OVERHEAD = 64

/** Whether `rows` are exactly the row objects the snapshot was made from (same names, same sealed buffers, same order). */
function sameRows(a: readonly SealedVariable[], b: readonly SealedVariable[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as SealedVariable
    const y = b[i] as SealedVariable
    if (x.sealed !== y.sealed || x.name !== y.name) return false
  }
  return true
}

/**
 * Envelope encryption for values: one random data key per vault, stored
 * only wrapped by the keyring, unwrapped once and cached in memory.
 * With no keyring every call fails with not_configured (503 on the API).
 */
export function createVaultCrypto(storage: Storage, keyring: Keyring | null, options: VaultCryptoOptions = {}): VaultCrypto {
  const maxKeys = options.maxKeys ?? 10_000
  // per vault: the data key in use (dropped by forget(), e.g. on every change the core sees)
  const keys = new LRUCache<string, Promise<{ readonly wrapped: Uint8Array; readonly key: Uint8Array }>>({ max: maxKeys })
  // per vault: the last wrap unwrapped and its key, so that re-reading an unchanged wrap after forget() asks no keyring (a KMS),
  // and answers the same key buffer, whose KeyObject seal.ts keeps (ciphers from a KeyObject are much cheaper)
  const unwrapped = new LRUCache<string, { readonly wrapped: Buffer; readonly key: Uint8Array }>({ max: maxKeys })
  // per vault and environment: its values sealed together (Snapshot); bounded by the bytes held (the rows too)
  const maxSnapshotBytes = options.maxSnapshotBytes ?? 16 * 1024 * 1024
  const snapshots = maxSnapshotBytes > 0 ? new LRUCache<string, Snapshot>({ maxSize: maxSnapshotBytes, sizeCalculation: (s) => s.bytes }) : null
  const unwrap = async (wrapped: Uint8Array, vaultId: string): Promise<Uint8Array> => {
    const known = unwrapped.get(vaultId)
    if (known?.wrapped.equals(wrapped)) return known.key
    if (!keyring) throw fail.notConfigured()
    const key = await keyring.unwrap(wrapped, vaultId)
    unwrapped.set(vaultId, { wrapped: Buffer.from(wrapped), key })
    return key
  }
  /**
   * The wrapped data key this process last opened, per vault (bounded, oldest dropped): a
   * stored wrap that differs from it and does not open means a rotation is under way.
   */
  const lastOpened = new Map<string, Buffer>()
  const LAST_OPENED_MAX = 10_000
  const rememberOpened = (vaultId: string, wrapped: Uint8Array): void => {
    lastOpened.delete(vaultId)
    lastOpened.set(vaultId, Buffer.from(wrapped))
    if (lastOpened.size > LAST_OPENED_MAX) lastOpened.delete(lastOpened.keys().next().value as string)
  }
  async function dataKey(vaultId: string, create: boolean): Promise<{ readonly wrapped: Uint8Array; readonly key: Uint8Array }> {
    if (!keyring) throw fail.notConfigured()
    const cached = keys.get(vaultId)
    if (cached) return cached
    const p = (async () => {
      let wrapped = await storage.getWrappedKey(vaultId)
      if (!wrapped) {
        if (!create) throw fail.decryptFailed(new Error('vault has values but no data key'))
        wrapped = await makeKey(keyring, vaultId)
      }
      try {
        const key = await unwrap(wrapped, vaultId)
        rememberOpened(vaultId, wrapped)
        return { wrapped, key }
      } catch (cause) {
        // Rewrapped meanwhile (a master-key rotation): the stored wrap is read again. If it, or
        // the one that failed, differs from the last wrap this process opened, and it does not
        // open, a rotation is under way: 503, try again, never a 500 (issue 25).
        const again = await storage.getWrappedKey(vaultId)
        const known = lastOpened.get(vaultId)
        const moved = (w: Uint8Array | null) => w !== null && known !== undefined && !known.equals(Buffer.from(w))
        if (again && !Buffer.from(again).equals(Buffer.from(wrapped))) {
          try {
            const key = await unwrap(again, vaultId)
            rememberOpened(vaultId, again)
            return { wrapped: again, key }
          } catch (rotating) {
            throw fail.keyRotating(rotating)
          }
        }
        throw moved(wrapped) ? fail.keyRotating(cause) : fail.decryptFailed(cause)
      }
    })()
    keys.set(vaultId, p)
    p.catch(() => {
      if (keys.peek(vaultId) === p) keys.delete(vaultId)
    })
    return p
  }

  /**
   * The vault's first data key: wrapped, then stored if the vault still has
   * none (compare-and-set; another writer's key wins), then kept under the
   * keyring's current key (`keepCurrent`). No lock is held while the keyring wraps.
   */
  async function makeKey(keyring: Keyring, vaultId: string): Promise<Uint8Array> {
    return retryOptimistic(
      5,
      () => `the data key of vault ${vaultId} kept changing while it was made`,
      async () => {
        const fresh = randomBytes(32)
        try {
          const wrapped = await keyring.wrap(fresh, vaultId)
          const r = await storage.swapWrappedKey({ kind: 'key', vaultId, expect: null, next: wrapped })
          if (!r.ok) {
            if (r.reason === 'not_found') throw new StorageError('23503', 'vaults')
            return (await storage.getWrappedKey(vaultId)) ?? AGAIN // another writer made it first
          }
          return (await keepCurrent(storage, keyring, vaultId, wrapped)) ?? (await storage.getWrappedKey(vaultId)) ?? AGAIN
        } finally {
          fresh.fill(0)
        }
      },
    )
  }

  async function sealWith(vaultId: string, environment: string, values: Readonly<Record<string, string>>) {
    const { wrapped, key } = await dataKey(vaultId, true)
    const names = Object.keys(values)
    const place = placesIn(vaultId, environment)
    const sealed = sealTexts(
      key,
      names.map((name) => values[name] as string),
      names.map(place),
    )
    return { sealedUnder: wrapped, values: names.map((name, i) => ({ name, sealed: sealed[i] as Buffer })) }
  }

  /** Opens every value with one key; throws on the first that does not open. Nothing opened is kept. */
  function openAll(vaultId: string, environment: string, key: Uint8Array, sealed: readonly SealedVariable[]): Record<string, string> {
    const out: Record<string, string> = {}
    const place = placesIn(vaultId, environment)
    for (const v of sealed) out[v.name] = openText(key, v.sealed, place(v.name))
    return out
  }

  /**
   * Every value, through the environment's snapshot when it was made from these very rows
   * with this key: one cipher instead of one per value. Otherwise each value is opened
   * (`openAll`, which fails on the first that does not open) and a new snapshot sealed.
   */
  function openWithSnapshot(vaultId: string, environment: string, key: Uint8Array, sealed: readonly SealedVariable[]): Record<string, string> {
    if (!snapshots || sealed.length < 2) return openAll(vaultId, environment, key, sealed)
    const held = heldSnapshot(vaultId, environment, key, sealed)
    if (held) return JSON.parse(openText(key, held.sealed, held.place)) as Record<string, string>
    const kept = keepSnapshot(vaultId, environment, key, sealed)
    wipe(kept.json)
    return kept.out
  }

  /** The values as JSON text (`openValuesJson`), from the snapshot when it holds, else opened one by one (and a snapshot kept). */
  function jsonWithSnapshot(vaultId: string, environment: string, key: Uint8Array, sealed: readonly SealedVariable[]): OpenedJson {
    const held = heldSnapshot(vaultId, environment, key, sealed)
    if (held) return { json: open(key, held.sealed, held.place), mayRefer: held.mayRefer }
    const { json, mayRefer } = keepSnapshot(vaultId, environment, key, sealed)
    return { json, mayRefer } // not the opened object keepSnapshot also answers
  }

  /** The environment's snapshot when it was made from exactly these rows with this key, else undefined. */
  function heldSnapshot(vaultId: string, environment: string, key: Uint8Array, sealed: readonly SealedVariable[]): Snapshot | undefined {
    if (!snapshots || sealed.length < 2) return undefined
    const held = snapshots.get(`${vaultId}\n${environment}`)
    return held && held.key === key && sameRows(held.rows, sealed) ? held : undefined
  }

  /** Opens each value (failing on the first that does not open) and keeps their snapshot, sealed, when snapshots are on. */
  function keepSnapshot(vaultId: string, environment: string, key: Uint8Array, sealed: readonly SealedVariable[]) {
    const out = openAll(vaultId, environment, key, sealed)
    const json = Buffer.from(JSON.stringify(out), 'utf8')
    let mayRefer = false
    for (const name in out) if (isReferenceForm(out[name] as string)) mayRefer = true
    if (snapshots && sealed.length >= 2) {
      const place = snapshotPlaceOf(vaultId, environment)
      const body = seal(key, json, place)
      let bytes = body.byteLength + SNAPSHOT_ROW_OVERHEAD
      for (const v of sealed) bytes += v.sealed.byteLength + 2 * v.name.length + SNAPSHOT_ROW_OVERHEAD
      snapshots.set(`${vaultId}\n${environment}`, { key, place, mayRefer, rows: [...sealed], sealed: body, bytes })
    }
    return { out, json, mayRefer }
  }

  /** Opens with the cached key, then once more with the stored key (another process may have rotated it away). */
  async function withKey<T>(vaultId: string, use: (key: Uint8Array) => T): Promise<T> {
    const first = await dataKey(vaultId, false)
    try {
      return use(first.key)
    } catch (cause) {
      keys.delete(vaultId)
      const fresh = await dataKey(vaultId, false)
      if (Buffer.from(fresh.wrapped).equals(Buffer.from(first.wrapped))) throw fail.decryptFailed(cause)
      try {
        return use(fresh.key)
      } catch (again) {
        throw fail.decryptFailed(again)
      }
    }
  }

  return {
    async sealHistory(vaultId, environment, changeSetId, entries) {
      const { key } = await dataKey(vaultId, true)
      const one = (name: string, side: 'before' | 'after', v: string | null) =>
        v === null ? null : sealText(key, v, historyPlaceOf(vaultId, environment, name, changeSetId, side))
      return entries.map((e) => ({ name: e.name, before: one(e.name, 'before', e.before), after: one(e.name, 'after', e.after) }))
    },
    async openHistory(vaultId, environment, changeSetId, side, entries) {
      if (!keyring) throw fail.notConfigured()
      if (entries.every((e) => e[side] === null)) return Object.fromEntries(entries.map((e) => [e.name, null]))
      return withKey(vaultId, (key) => {
        const out: Record<string, string | null> = {}
        for (const e of entries) {
          const sealed = e[side]
          // zero bytes: a value that could not be opened when it was replaced (domain/changes.ts,
          // UNREADABLE_BEFORE); left out, so nobody takes it for "none"
          if (sealed !== null && sealed.byteLength === 0) continue
          out[e.name] = sealed === null ? null : openText(key, sealed, historyPlaceOf(vaultId, environment, e.name, changeSetId, side))
        }
        return out
      })
    },
    async sealOverride(vaultId, environment, name, personId, value) {
      const { key } = await dataKey(vaultId, true)
      return sealText(key, value, overridePlaceOf(vaultId, environment, name, personId))
    },
    async openOverrides(vaultId, environment, personId, rows) {
      if (!keyring) throw fail.notConfigured()
      if (rows.length === 0) return {}
      return withKey(vaultId, (key) => {
        const out: Record<string, string> = {}
        for (const r of rows) out[r.name] = openText(key, r.sealed, overridePlaceOf(vaultId, environment, r.name, personId))
        return out
      })
    },
    async sealWebhookSecret(vaultId, webhookId, secret) {
      const { key } = await dataKey(vaultId, true)
      return sealText(key, secret, webhookPlaceOf(vaultId, webhookId))
    },
    async openWebhookSecret(vaultId, webhookId, sealed) {
      if (!keyring) throw fail.notConfigured()
      return withKey(vaultId, (key) => openText(key, sealed, webhookPlaceOf(vaultId, webhookId)))
    },
    async sealValues(vaultId, environment, values) {
      return (await sealWith(vaultId, environment, values)).values
    },
    seal: sealWith,
    forget(vaultId) {
      if (vaultId === undefined) {
        keys.clear()
        snapshots?.clear()
        return
      }
      keys.delete(vaultId)
      if (snapshots) for (const id of [...snapshots.keys()]) if (id.startsWith(`${vaultId}\n`)) snapshots.delete(id)
    },
    async rotateDataKey(vaultId) {
      if (!keyring) throw fail.notConfigured()
      try {
        return await rotateDataKey(storage, keyring, vaultId)
      } finally {
        keys.delete(vaultId)
      }
    },
    async openValues(vaultId, environment, sealed) {
      if (sealed.length === 0) {
        if (!keyring) throw fail.notConfigured()
        return {}
      }
      return withKey(vaultId, (key) => openWithSnapshot(vaultId, environment, key, sealed))
    },
    async openValuesJson(vaultId, environment, sealed) {
      if (!keyring) throw fail.notConfigured()
      if (sealed.length === 0) return { json: Buffer.from('{}'), mayRefer: false }
      return withKey(vaultId, (key) => jsonWithSnapshot(vaultId, environment, key, sealed))
    },
  }
}

/**
 * Data-key rotation of one vault: a new random data key, wrapped by the
 * keyring, and every sealed value of the vault (variables, staged values
 * of pending pushes, the versions kept in history, overrides and the
 * webhooks' signing secrets) opened with the old key and sealed with the
 * new one, then written in one storage transaction if nothing of the vault
 * changed since it was read (`swapWrappedKey`, compare-and-set; read and
 * sealed again otherwise). No lock is held while values are sealed. A value
 * that does not open stops it with nothing changed. False when the vault
 * has no key yet.
 */
export async function rotateDataKey(storage: Storage, keyring: Keyring, vaultId: string): Promise<boolean> {
  return retryOptimistic(
    5,
    () => `vault ${vaultId} kept changing while its data key was rotated`,
    async () => {
      const current = await storage.readVaultSecrets(vaultId)
      if (!current) return false
      const next = await resealed(keyring, vaultId, current)
      const r = await storage.swapWrappedKey({ kind: 'reseal', vaultId, expect: current, next })
      if (!r.ok) return r.reason === 'not_found' ? false : AGAIN
      await keepCurrent(storage, keyring, vaultId, next.wrappedKey)
      return true
    },
  )
}

/**
 * A data key just stored, kept under the keyring's current key: if the keyring's key changed
 * while it was wrapped (a master-key rotation swapped the key file), it is wrapped again under
 * the new one, since the rotation's last pass may have read the vault before it was stored.
 * Answers the key stored, or null when another writer changed it meanwhile (read it again).
 */
async function keepCurrent(storage: Storage, keyring: Keyring, vaultId: string, stored: Uint8Array): Promise<Uint8Array | null> {
  let wrapped = stored
  while (keyring.isCurrent && !(await keyring.isCurrent(wrapped, vaultId))) {
    const again = await keyring.wrap(await keyring.unwrap(wrapped, vaultId), vaultId)
    if (!(await storage.swapWrappedKey({ kind: 'key', vaultId, expect: wrapped, next: again })).ok) return null // the rotation rewrapped it first
    wrapped = again
  }
  return wrapped
}

/** A vault's secrets sealed again under a new data key (pure crypto; nothing stored). */
async function resealed(keyring: Keyring, vaultId: string, current: VaultSecrets): Promise<VaultSecrets> {
  const oldKey = await keyring.unwrap(current.wrappedKey, vaultId)
  const newKey = randomBytes(32)
  const again = (environment: string, name: string, sealed: Uint8Array): Uint8Array => {
    const place = placeOf(vaultId, environment, name)
    return reseal(oldKey, newKey, sealed, place)
  }
  const againInHistory = (h: VaultSecrets['history'][number]): Uint8Array => {
    if (h.sealed.byteLength === 0) return h.sealed // a value recorded as unreadable (UNREADABLE_BEFORE)
    const place = historyPlaceOf(vaultId, h.environment, h.name, h.changeSetId, h.side)
    return reseal(oldKey, newKey, h.sealed, place)
  }
  try {
    return {
      wrappedKey: await keyring.wrap(newKey, vaultId),
      variables: current.variables.map((v) => ({ ...v, sealed: again(v.environment, v.name, v.sealed) })),
      staged: current.staged.map((v) => ({ ...v, sealed: again(v.environment, v.name, v.sealed) })),
      history: current.history.map((h) => ({ ...h, sealed: againInHistory(h) })),
      ...(current.overrides
        ? {
            overrides: current.overrides.map((o) => {
              const place = overridePlaceOf(vaultId, o.environment, o.name, o.personId)
              return { ...o, sealed: reseal(oldKey, newKey, o.sealed, place) }
            }),
          }
        : {}),
      ...(current.webhooks
        ? {
            webhooks: current.webhooks.map((w) => {
              const place = webhookPlaceOf(vaultId, w.webhookId)
              return { webhookId: w.webhookId, sealed: reseal(oldKey, newKey, w.sealed, place) }
            }),
          }
        : {}),
    }
  } finally {
    newKey.fill(0)
  }
}

export type { AccessLogEntry }

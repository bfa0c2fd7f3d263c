import { createHash, createHmac, timingSafeEqual, type Hash, type Hmac } from 'node:crypto'
import { createReadStream, createWriteStream, fsyncSync, openSync, closeSync, renameSync, rmSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { createGunzip, createGzip } from 'node:zlib'
import { once } from 'node:events'

/**
 * The backup file: gzip of JSON Lines.
 *   line 1     the header: format, version, time, source database, server version, key id
 *   then       per table a {"table", "columns"} line and one JSON array per row
 *   last line  the trailer: row counts, SHA-256 of every byte before it, and an HMAC of the
 *              same bytes under a key derived from the master key
 * Values stay as stored: sealed values and wrapped data keys are bytes ({"$b": base64}),
 * PostgreSQL jsonb is {"$j": value}. SHA-256 finds a truncated or damaged file without a key;
 * the HMAC finds a deliberate change by anyone who does not hold the master key.
 */
export const BACKUP_FORMAT = 'envkeep-backup'
export const BACKUP_VERSION = 1

export interface BackupHeader {
  readonly format: typeof BACKUP_FORMAT
  readonly version: number
  readonly createdAt: string
  readonly source: 'sqlite' | 'postgres'
  readonly serverVersion: string
  /** which master key opens the values: derived from the key, never the key; null when the server had none */
  readonly keyId: string | null
}

export interface BackupTrailer {
  readonly end: true
  readonly counts: Readonly<Record<string, number>>
  readonly sha256: string
  readonly hmac: string | null
}

/** What a backup failed to be, in words for the operator. */
export class BackupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'BackupError'
  }
}

/** The id of a master key: 16 characters of an HMAC under it, so the key cannot be recovered from it. */
export function keyIdOf(key: Uint8Array): string {
  return createHmac('sha256', key).update('envkeep backup key id v1').digest('base64url').slice(0, 16)
}

function integrityKey(key: Uint8Array): Buffer {
  return createHmac('sha256', key).update('envkeep backup integrity v1').digest()
}

/** A column value as it goes into the file. */
export function encodeValue(v: unknown, jsonColumn: boolean): unknown {
  if (v === null || v === undefined) return null
  if (v instanceof Uint8Array) return { $b: Buffer.from(v).toString('base64') }
  if (typeof v === 'bigint') return v.toString()
  if (jsonColumn) return { $j: v }
  return v
}

export interface BackupWriter {
  table(name: string, columns: readonly string[]): void
  row(values: readonly unknown[]): void
  /** writes the trailer, flushes, fsyncs and moves the file into place; returns the counts */
  finish(): Promise<Record<string, number>>
  /** removes the partial file */
  abort(): Promise<void>
}

/** Writes `path` through `path.partial` (mode 0600), so a failed backup never leaves a file under the final name. */
export function createBackupWriter(path: string, header: Omit<BackupHeader, 'format' | 'version'>, key: Uint8Array | null): BackupWriter {
  const partial = `${path}.partial`
  const out = createWriteStream(partial, { mode: 0o600, flags: 'wx' })
  const gzip = createGzip()
  gzip.pipe(out)
  const hash: Hash = createHash('sha256')
  const hmac: Hmac | null = key ? createHmac('sha256', integrityKey(key)) : null
  const counts: Record<string, number> = {}
  let current: string | null = null
  // lines are gathered into chunks of about 64 KiB: one hash update and one gzip write each
  let pending: string[] = []
  let pendingLength = 0
  const flush = () => {
    if (pending.length === 0) return
    const bytes = Buffer.from(pending.join(''), 'utf8')
    pending = []
    pendingLength = 0
    hash.update(bytes)
    hmac?.update(bytes)
    gzip.write(bytes)
  }
  const line = (o: unknown) => {
    const text = `${JSON.stringify(o)}\n`
    pending.push(text)
    pendingLength += text.length
    if (pendingLength >= 65_536) flush()
  }
  line({ format: BACKUP_FORMAT, version: BACKUP_VERSION, ...header })
  return {
    table(name, columns) {
      current = name
      counts[name] = 0
      line({ table: name, columns })
    },
    row(values) {
      if (current === null) throw new Error('row before table')
      counts[current]!++
      line(values)
    },
    async finish() {
      flush()
      const trailer: BackupTrailer = { end: true, counts, sha256: hash.digest('hex'), hmac: hmac ? hmac.digest('hex') : null }
      gzip.end(`${JSON.stringify(trailer)}\n`)
      await once(out, 'finish')
      const fd = openSync(partial, 'r')
      try {
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      renameSync(partial, path)
      return counts
    },
    async abort() {
      gzip.destroy()
      out.destroy()
      rmSync(partial, { force: true })
    },
  }
}

export interface BackupVisitor {
  header?(h: BackupHeader): void | Promise<void>
  table?(name: string, columns: readonly string[]): void | Promise<void>
  row?(table: string, values: readonly unknown[]): void | Promise<void>
}

export interface ReadResult {
  readonly header: BackupHeader
  readonly trailer: BackupTrailer
  /** 'ok' when the HMAC matched under the key given, 'no key' when none was given, 'unsigned' when the backup has none */
  readonly signature: 'ok' | 'no key' | 'unsigned'
}

/**
 * Reads a backup from start to end, calling the visitor, and checks it: the format, that every
 * table's rows match the trailer's counts, the SHA-256 (damage, truncation), and with a key
 * the key id and the HMAC (tampering). Throws BackupError saying which. A visitor sees rows
 * before the checks at the end pass: restore writes inside a transaction it rolls back then.
 */
export async function readBackup(path: string, key: Uint8Array | null, visit: BackupVisitor = {}): Promise<ReadResult> {
  let input: NodeJS.ReadableStream
  try {
    const file = createReadStream(path)
    await once(file, 'open')
    input = file.pipe(createGunzip())
    file.on('error', (err) => (input as NodeJS.ReadableStream & { destroy(e: Error): void }).destroy(err))
  } catch (err) {
    throw new BackupError(`cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, { cause: err })
  }
  const hash = createHash('sha256')
  let hmac: Hmac | null = null
  let header: BackupHeader | null = null
  let trailer: BackupTrailer | null = null
  let table: string | null = null
  const seen: Record<string, number> = {}
  try {
    for await (const text of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
      if (trailer) throw new BackupError('the backup has data after its end: it was changed')
      let o: unknown
      try {
        o = JSON.parse(text)
      } catch {
        throw new BackupError('the backup holds a line that is not JSON: it is damaged')
      }
      const bytes = Buffer.from(`${text}\n`, 'utf8')
      if (!header) {
        const h = o as Partial<BackupHeader> | null
        if (!h || h.format !== BACKUP_FORMAT) throw new BackupError('this is not an envkeep backup')
        if (h.version !== BACKUP_VERSION)
          throw new BackupError(`this backup has format version ${String(h.version)}; this envkeep-server reads version ${BACKUP_VERSION}`)
        header = h as BackupHeader
        if (key) {
          if (header.keyId !== null && header.keyId !== keyIdOf(key))
            throw new BackupError(`the master key given is not the one of this backup (key id ${keyIdOf(key)}; the backup's is ${header.keyId})`)
          hmac = createHmac('sha256', integrityKey(key))
        }
        hash.update(bytes)
        hmac?.update(bytes)
        await visit.header?.(header)
        continue
      }
      if (Array.isArray(o)) {
        if (table === null) throw new BackupError('the backup has a row before any table: it is damaged')
        seen[table]!++
        hash.update(bytes)
        hmac?.update(bytes)
        await visit.row?.(table, o)
        continue
      }
      const rec = o as { table?: unknown; columns?: unknown; end?: unknown }
      if (rec && rec.end === true) {
        trailer = o as BackupTrailer
        continue
      }
      if (!rec || typeof rec.table !== 'string' || !Array.isArray(rec.columns)) throw new BackupError('the backup holds a line it cannot place: it is damaged')
      table = rec.table
      if (seen[table] !== undefined) throw new BackupError(`the backup holds table ${table} twice: it was changed`)
      seen[table] = 0
      hash.update(bytes)
      hmac?.update(bytes)
      await visit.table?.(table, rec.columns as string[])
    }
  } catch (err) {
    if (err instanceof BackupError) throw err
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'Z_BUF_ERROR' || code === 'Z_DATA_ERROR' || /unexpected end of file/i.test(String((err as Error).message)))
      throw new BackupError('the backup is truncated or damaged (its compressed data ends early or does not decode)', { cause: err })
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') throw new BackupError(`cannot read ${path} (${code})`, { cause: err })
    throw err
  }
  if (!header) throw new BackupError('the backup is empty')
  if (!trailer) throw new BackupError('the backup is truncated: its end (counts and checksum) is missing')
  const digest = hash.digest('hex')
  if (typeof trailer.sha256 !== 'string' || !safeEqualHex(digest, trailer.sha256))
    throw new BackupError('the backup does not match its SHA-256: it was damaged or changed after it was written')
  for (const [t, n] of Object.entries(trailer.counts ?? {}))
    if (seen[t] !== n) throw new BackupError(`table ${t} holds ${seen[t] ?? 0} rows, the backup's manifest says ${n}: it was changed`)
  for (const t of Object.keys(seen)) if (trailer.counts?.[t] === undefined) throw new BackupError(`table ${t} is not in the manifest: it was changed`)
  let signature: ReadResult['signature'] = 'no key'
  if (hmac) {
    if (trailer.hmac === null) signature = 'unsigned'
    else if (typeof trailer.hmac !== 'string' || !safeEqualHex(hmac.digest('hex'), trailer.hmac))
      throw new BackupError('the backup does not match its signature under this master key: it was changed after it was written')
    else signature = 'ok'
  }
  return { header, trailer, signature }
}

function safeEqualHex(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8')
  const y = Buffer.from(b, 'utf8')
  return x.length === y.length && timingSafeEqual(x, y)
}

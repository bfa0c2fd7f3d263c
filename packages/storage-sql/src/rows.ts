/**
 * Conversions between stored columns and the contract's plain data, the same
 * for every SQL database: times are integer milliseconds (PostgreSQL `bigint`
 * arrives as a string), booleans 0/1 (PostgreSQL reads `'1'` as true), lists
 * JSON text (PostgreSQL `jsonb` arrives parsed), sealed values bytes.
 */

/** A stored number (or bigint as text) as a number. */
export const num = (v: unknown): number => Number(v)

/** A stored time in milliseconds as a Date. */
export const date = (v: unknown): Date => new Date(Number(v))

/** A nullable stored time as a Date or null. */
export const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : new Date(Number(v)))

/** A boolean as stored (0/1 works for SQLite integers and PostgreSQL booleans). */
export const flag = (b: boolean): number => (b ? 1 : 0)

/** A stored boolean (0/1, or true/false). */
export const isSet = (v: unknown): boolean => v === true || v === 1 || v === '1' || v === 't'

/** A value as stored JSON text (PostgreSQL parses it into `jsonb`). */
export const toJson = (v: unknown): string => JSON.stringify(v)

/** Stored JSON (text, or already parsed by the driver). */
export function fromJson<T>(v: unknown): T {
  return (typeof v === 'string' ? JSON.parse(v) : v) as T
}

/** Bytes as the drivers bind them (a Buffer view; copies nothing). */
export function bytes(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength)
}

/** Stored bytes as a fresh Uint8Array (not a view of a driver's buffer). */
export const copyBytes = (b: Uint8Array): Uint8Array => new Uint8Array(b)

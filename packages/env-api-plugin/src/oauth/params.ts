/**
 * Reading OAuth parameters from a parsed query or form body: a repeated
 * parameter (parsers turn repeats into arrays) is REPEATED, an empty one is
 * absent (OAuth 2.1 §3.1, §3.2).
 */
export const REPEATED: unique symbol = Symbol('repeated parameter')

export type ParamValue = string | undefined | typeof REPEATED

export type RawParams = Readonly<Record<string, unknown>>

export function asParams(value: unknown): RawParams {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as RawParams) : {}
}

export function param(p: RawParams, name: string): ParamValue {
  if (!Object.hasOwn(p, name)) return undefined
  const v = p[name]
  if (v === undefined || v === null || v === '') return undefined
  if (typeof v !== 'string') return REPEATED
  return v
}

/** Whether any parameter is given more than once. */
export function hasRepeated(p: RawParams): boolean {
  return Object.values(p).some((v) => Array.isArray(v))
}

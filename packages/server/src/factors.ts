import { randomBytes, randomUUID } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { Secret, TOTP } from 'otpauth'
import type { Keyring } from '@envkeep/env-api-plugin'
import type { AccountStore } from './accounts/account-store.js'
import type { FactorRecord, SigninEventKind } from './accounts/factor-store.js'
import { hashToken } from './secrets.js'

/** TOTP as RFC 6238 and every authenticator app: SHA-1, 6 digits, 30 s; one step either side accepted. */
const PERIOD = 30
const WINDOW = 1

/** A fresh TOTP secret (20 random bytes, RFC 4226's advice), in base32 for the person to type or scan. */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32
}

export function totpFor(secretBase32: string, label: string): TOTP {
  return new TOTP({ issuer: 'envkeep', label, algorithm: 'SHA1', digits: 6, period: PERIOD, secret: Secret.fromBase32(secretBase32) })
}

/** The time step of `code` within the window around `now`, or null when it matches none. */
export function totpStep(secretBase32: string, code: string, now: Date): number | null {
  if (!/^[0-9]{6}$/.test(code)) return null
  const delta = totpFor(secretBase32, 'x').validate({ token: code, timestamp: now.getTime(), window: WINDOW })
  return delta === null ? null : Math.floor(now.getTime() / 1000 / PERIOD) + delta
}

/** The additional data binding a sealed TOTP secret to its account and factor. */
const place = (accountId: string, factorId: string) => `envkeep totp:${accountId}:${factorId}`

/** Seals a TOTP secret under the master key, as values are (AES-256-GCM), bound to its account and factor. */
export async function sealTotpSecret(keyring: Keyring, accountId: string, factorId: string, secretBase32: string): Promise<string> {
  return Buffer.from(await keyring.wrap(Buffer.from(secretBase32, 'utf8'), place(accountId, factorId))).toString('base64')
}

export async function openTotpSecret(keyring: Keyring, f: FactorRecord): Promise<string> {
  return Buffer.from(await keyring.unwrap(Buffer.from(f.sealedSecret ?? '', 'base64'), place(f.accountId, f.id))).toString('utf8')
}

/** Ten recovery codes, `xxxxx-xxxxx` from 31 unambiguous letters and digits (about 49 bits each); shown once, stored hashed. */
export function newRecoveryCodes(): string[] {
  const alphabet = 'abcdefghjkmnpqrstuvwxyz23456789'
  return Array.from({ length: 10 }, () => {
    const bytes = randomBytes(10)
    const chars = [...bytes].map((b) => alphabet[b % alphabet.length])
    return `${chars.slice(0, 5).join('')}-${chars.slice(5).join('')}`
  })
}

/** What is stored of a recovery code: SHA-256 of its normalized form (case, spaces and dashes ignored). */
export function recoveryCodeHash(code: string): string {
  return hashToken(`envkeep-recovery:${code.toLowerCase().replace(/[\s-]/g, '')}`)
}

export function looksLikeRecoveryCode(code: string): boolean {
  return /^[a-z0-9]{10}$/.test(code.toLowerCase().replace(/[\s-]/g, ''))
}

/**
 * Checks a code typed at the second step: a TOTP code of one of the account's authenticator
 * apps (each time step works once), or one of its recovery codes (each works once). Returns
 * how it passed, or null.
 */
export async function checkSecondFactorCode(
  accounts: AccountStore,
  keyring: Keyring | null,
  accountId: string,
  code: string,
  now: Date,
): Promise<'totp' | 'recovery_code' | null> {
  const typed = code.trim().replace(/\s/g, '')
  if (/^[0-9]{6}$/.test(typed) && keyring) {
    for (const f of await accounts.listFactors(accountId)) {
      if (f.kind !== 'totp') continue
      const step = totpStep(await openTotpSecret(keyring, f), typed, now)
      if (step !== null && (await accounts.useTotpStep(f.id, step, now))) return 'totp'
    }
    return null
  }
  if (looksLikeRecoveryCode(typed) && (await accounts.useRecoveryCode(accountId, recoveryCodeHash(typed)))) return 'recovery_code'
  return null
}

/** Records a sign-in event in the server-level log (`admin audit`); never a code, a password or a typed email. */
export async function signinEvent(
  accounts: AccountStore,
  request: FastifyRequest | null,
  accountId: string | null,
  event: SigninEventKind,
  detail: string | null,
  now: Date,
): Promise<void> {
  await accounts.recordSigninEvent({ id: randomUUID(), at: now, accountId, event, detail, address: request?.ip ?? null })
  request?.log.info({ account: accountId, event, detail }, 'sign-in event')
}

import type { FastifyRequest } from 'fastify'
import type { AccessAction, AccessLogEntry, EnvironmentInfo, VaultAccess } from '../../adapters/storage.js'
import { signInOf } from '../../hooks/authenticate.js'
import { errors, vaultTag } from '../../errors.js'
import type { ResolvedOptions } from '../../options.js'

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A path id in canonical (lowercase) form, or null when it is not a UUID. */
export function uuidOrNull(s: string): string | null {
  return UUID_RE.test(s) ? s.toLowerCase() : null
}

/** How a vault id from the path may appear in a message: its first 8 characters, once it is a UUID. */
export function vaultPhrase(s: string): string {
  const id = uuidOrNull(s)
  return id ? `vault ${vaultTag(id)}` : 'a vault'
}

/**
 * The vault and environment named in the path as this person sees them, or
 * 404 not_found (the same answer for a malformed id, an unknown vault, a
 * vault not shared with the person and a missing environment).
 */
export async function findEnvironment(
  opts: ResolvedOptions,
  request: FastifyRequest,
  vaultParam: string,
  envParam: string,
): Promise<{ vault: VaultAccess; env: EnvironmentInfo }> {
  const id = uuidOrNull(vaultParam)
  if (!id) throw errors.notFound('the vault or environment')
  const vault = await opts.storage.getVault(id, signInOf(request).personId)
  const env = vault?.environments.find((e) => e.name === envParam)
  if (!vault || !env) throw errors.notFound('the vault or environment')
  return { vault, env }
}

/** An access log entry for this request's sign-in. Names only, never values. */
export function logEntry(
  opts: ResolvedOptions,
  request: FastifyRequest,
  vaultId: string,
  action: AccessAction,
  environment: string | null,
  names: readonly string[],
  at: Date = opts.now(),
): AccessLogEntry {
  const s = signInOf(request)
  return {
    vaultId,
    at,
    personId: s.personId,
    signInId: s.id,
    clientId: s.clientId,
    action,
    environment,
    names,
    address: request.ip ?? null,
    subject: null,
    detail: null,
  }
}

/** Why a role may not use an environment's values, in words. */
export function roleRefusal(vault: VaultAccess, env: EnvironmentInfo, verb: string): string {
  if (vault.role === 'viewer') return `your role (viewer) cannot ${verb} any environment`
  if (env.ownersOnly) return `your role (${vault.role}) cannot ${verb} owners-only environments`
  return `your role (${vault.role}) cannot ${verb} this environment`
}

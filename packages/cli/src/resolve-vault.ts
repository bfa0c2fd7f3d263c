import type { ApiClient } from './api-client.js'
import { CliError, usageError } from './errors.js'

export interface VaultListing {
  readonly id: string
  readonly name: string
  readonly role: string
  readonly environments: string[]
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const ENV_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

export async function listVaults(api: ApiClient): Promise<VaultListing[]> {
  const body = await api.request<{ vaults?: VaultListing[] }>('/api/env/vaults', { what: 'could not list your vaults' })
  return Array.isArray(body.vaults) ? body.vaults : []
}

/** A vault given by id (used as is) or by a name that must match exactly one vault shared with you. */
export async function resolveVault(api: ApiClient, ref: string): Promise<{ id: string; label: string }> {
  if (UUID_RE.test(ref)) return { id: ref.toLowerCase(), label: ref.slice(0, 8) }
  const matches = (await listVaults(api)).filter((v) => v.name === ref)
  if (matches.length === 1) return { id: matches[0]!.id, label: `"${ref}"` }
  if (matches.length === 0) {
    throw new CliError(`no vault named "${ref}" is shared with you on ${api.baseUrl}`, { hint: 'list them with: envkeep vaults' })
  }
  throw usageError(
    `${matches.length} vaults are named "${ref}"`,
    `give the id instead: ${matches.map((v) => v.id).join(', ')}`,
  )
}

export function checkEnvironment(env: string): string {
  if (!ENV_RE.test(env)) throw usageError(`"${env}" is not an environment name`)
  return env
}

import type { ApiClient } from './api-client.js'
import { CliError, usageError } from './errors.js'
import { didYouMean } from './suggest.js'

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
  const all = await listVaults(api)
  const exact = all.filter((v) => v.name === ref)
  // names are unique regardless of case on current servers: `Shop` finds `shop`
  const matches = exact.length > 0 ? exact : all.filter((v) => v.name.toLowerCase() === ref.toLowerCase())
  if (matches.length === 1) return { id: matches[0]!.id, label: `"${matches[0]!.name}"` }
  if (matches.length === 0) {
    const names = [...new Set(all.map((v) => v.name))]
    throw new CliError(`no vault named "${ref}" is shared with you on ${api.baseUrl}${didYouMean(ref, names)}`, {
      hint: names.length ? `your vaults: ${names.join(', ')}` : 'no vault is shared with you yet',
    })
  }
  throw usageError(
    `${matches.length} vaults are named "${ref}"`,
    `give the id instead:\n${matches.map((v) => `  ${v.id}  ${v.name} (${v.role}; ${v.environments.join(', ') || 'no environment you may read'})`).join('\n')}`,
  )
}

export function checkEnvironment(env: string): string {
  if (!ENV_RE.test(env)) throw usageError(`"${env}" is not an environment name`)
  return env
}

/**
 * After a 404 reading an environment: the environments this person may read in the vault,
 * with "did you mean …", or null when the vault itself is the problem.
 */
export async function environmentHint(api: ApiClient, vaultId: string, env: string): Promise<{ message: string; hint: string } | null> {
  const vault = (await listVaults(api)).find((v) => v.id === vaultId)
  if (!vault || vault.environments.includes(env)) return null
  return {
    message: `vault "${vault.name}" has no environment "${env}" that you may read${didYouMean(env, vault.environments)}`,
    hint: vault.environments.length ? `environments you may read: ${vault.environments.join(', ')}` : 'your role may read no environment of this vault',
  }
}

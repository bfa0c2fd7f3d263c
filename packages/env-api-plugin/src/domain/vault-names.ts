import type { DomainDeps } from './deps.js'
import { fail } from './failure.js'

/** Vault names are unique (case-insensitive) among the vaults a person reaches (decisions.md). */

/** Case-insensitive comparison of vault names, as people read them. */
export function sameVaultName(a: string, b: string): boolean {
  return a.normalize('NFC').toLocaleLowerCase('en') === b.normalize('NFC').toLocaleLowerCase('en')
}

/** Refuses when `personId` reaches a vault (other than `except`) with this name. */
export async function requireFreeName(d: DomainDeps, personId: string, name: string, who: 'you' | 'they', except?: string): Promise<void> {
  const clash = (await d.storage.listVaults(personId)).find((v) => v.id !== except && sameVaultName(v.name, name))
  if (!clash) return
  throw fail.conflict(
    who === 'you'
      ? `you already have a vault named "${clash.name}"; choose another name`
      : `that person already has a vault named "${clash.name}"; rename one of the two first`,
  )
}

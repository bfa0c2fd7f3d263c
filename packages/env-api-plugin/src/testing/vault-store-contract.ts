import type { ContractRunner, MakeVaultStore, VaultStoreContractCase } from './contract/types.js'
import { importCases } from './contract/import-cases.js'
import { usageCases } from './contract/usage-cases.js'
import { variableCases } from './contract/variable-cases.js'
import { vaultCases } from './contract/vault-cases.js'
import { vaultAdminContract } from './vault-admin-contract.js'

export type { ContractRunner, MakeVaultStore, VaultStoreContractCase, VaultStoreFixture, VaultStoreProbe } from './contract/types.js'

/** Runs every case of the contract as a subtest of `t` (a case fails by throwing). */
export function runVaultStoreContract(t: ContractRunner, make: MakeVaultStore): void {
  for (const c of [...vaultStoreContract, ...vaultAdminContract]) {
    t.test(c.name, async (t) => {
      await c.run(make)
      t.pass('the case holds')
    })
  }
}

// ---- cases (in ./contract/, by what they cover) ---------------------------------

export const vaultStoreContract: readonly VaultStoreContractCase[] = [...vaultCases, ...variableCases, ...importCases, ...usageCases]

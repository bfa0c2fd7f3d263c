import type { CiIdentityChange, CiIdentityRecord, CiIdentityStore, NewCiSignIn } from '../adapters/ci-identity-store.js'
import type { ChangeResult } from '../adapters/results.js'
import { ciPrincipal } from '../adapters/ci-identity-store.js'
import type { AccessLogEntry } from '../adapters/vault-store.js'
import { StorageError } from '../errors.js'
import { revoke } from './memory-oauth-store.js'
import type { MemoryDb } from './memory-state.js'

const byName = (a: CiIdentityRecord, b: CiIdentityRecord) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id < b.id ? -1 : 1)

/** The reference CI-identity store on the same in-memory data as the vault and OAuth stores. */
export class MemoryCiIdentityStore implements CiIdentityStore {
  readonly #db: MemoryDb

  constructor(db: MemoryDb) {
    this.#db = db
  }

  changeCiIdentity(change: CiIdentityChange, log: AccessLogEntry): Promise<ChangeResult<'name_taken' | 'not_found', CiIdentityRecord>> {
    return this.#db.write('ci_identities', async (s): Promise<ChangeResult<'name_taken' | 'not_found', CiIdentityRecord>> => {
      if (change.kind === 'remove') {
        const found = s.ciIdentities.get(change.id)
        if (!found || found.vaultId !== change.vaultId) return { ok: false, reason: 'not_found' }
        s.ciIdentities.delete(change.id)
        await this.#db.step()
        const principal = ciPrincipal(change.id)
        for (const r of [...s.signIns.values()]) if (r.personId === principal) revoke(s, r.id, change.now.getTime())
        this.#db.appendLog(s, log)
        return { ok: true, value: found }
      }
      const input = change.identity
      if (!s.vaults.has(input.vaultId)) return { ok: false, reason: 'not_found' }
      if (s.ciIdentities.has(input.id)) throw new StorageError('23505', 'ci_identities_pk')
      const lower = input.name.toLowerCase()
      for (const i of s.ciIdentities.values()) if (i.vaultId === input.vaultId && i.name.toLowerCase() === lower) return { ok: false, reason: 'name_taken' }
      await this.#db.step()
      const identity: CiIdentityRecord = Object.freeze({
        id: input.id,
        vaultId: input.vaultId,
        name: input.name,
        issuer: input.issuer,
        audience: input.audience,
        subjectPattern: input.subjectPattern,
        requiredClaims: Object.freeze({ ...input.requiredClaims }),
        role: input.role,
        environments: input.environments === null ? null : Object.freeze([...input.environments]),
        createdAt: new Date(input.now.getTime()),
      })
      s.ciIdentities.set(identity.id, identity)
      this.#db.appendLog(s, log)
      return { ok: true, value: identity }
    })
  }

  findCiIdentities(filter: { readonly vaultId: string } | { readonly issuer: string } | { readonly id: string }): Promise<CiIdentityRecord[]> {
    const wanted = (i: CiIdentityRecord) =>
      'vaultId' in filter ? i.vaultId === filter.vaultId : 'issuer' in filter ? i.issuer === filter.issuer : i.id === filter.id
    return this.#db.read('ci_identities', (s) => [...s.ciIdentities.values()].filter(wanted).sort(byName))
  }

  issueCiSignIn(input: NewCiSignIn): Promise<ChangeResult<'replayed'>> {
    return this.#db.write('sign_ins', async (s): Promise<ChangeResult<'replayed'>> => {
      if (s.usedSubjectTokens.has(input.subjectTokenKey)) return { ok: false, reason: 'replayed' }
      s.usedSubjectTokens.set(input.subjectTokenKey, input.subjectTokenExpiresAt.getTime())
      await this.#db.step()
      const si = input.signIn
      if (s.signIns.has(si.id)) throw new StorageError('23505', 'sign_ins_pk')
      if (s.accessTokens.has(input.accessTokenHash)) throw new StorageError('23505', 'tokens')
      s.signIns.set(
        si.id,
        Object.freeze({
          id: si.id,
          personId: si.personId,
          clientId: si.clientId,
          resource: si.resource,
          scopes: Object.freeze([...si.scopes]),
          codeHash: null,
          createdAt: si.createdAt.getTime(),
          expiresAt: si.expiresAt.getTime(),
          lastUsedAt: null,
          revokedAt: null,
          label: si.label,
        }),
      )
      s.accessTokens.set(input.accessTokenHash, Object.freeze({ signInId: si.id, expiresAt: si.expiresAt.getTime() }))
      return { ok: true, value: undefined }
    })
  }
}

import { canDecideImport } from './access.js'
import type { ImportRecord, Storage } from './adapters/storage.js'

export interface DecideImportInput {
  readonly importId: string
  readonly decision: 'applied' | 'rejected'
  /** the person deciding */
  readonly personId: string
  readonly now: Date
  /** for the access log */
  readonly signInId?: string | null
  readonly clientId?: string | null
  readonly address?: string | null
}

export type DecideImportOutcome =
  /** the push is now applied (all values written) or rejected */
  | { readonly outcome: 'decided'; readonly import: ImportRecord }
  /** unknown push, or a vault/environment the person cannot see: never says which */
  | { readonly outcome: 'not_found' }
  /** the person sees the push but may not decide it; `reason` in words */
  | { readonly outcome: 'forbidden'; readonly reason: string; readonly import: ImportRecord }
  /** already decided or expired: nothing changed */
  | { readonly outcome: 'not_pending'; readonly import: ImportRecord }

/**
 * Decides a pending push for the review page. Who may: an owner, or an
 * editor on an environment that is not owners-only; the sender only when
 * the vault does not require a second person. Applying writes every staged
 * value or none (one storage call), and logs `push_applied` / `push_rejected`.
 */
export async function decideImport(storage: Storage, input: DecideImportInput): Promise<DecideImportOutcome> {
  const imp = await storage.getImport(input.importId, input.now)
  if (!imp) return { outcome: 'not_found' }
  const vault = await storage.getVault(imp.vaultId, input.personId)
  const env = vault?.environments.find((e) => e.name === imp.environment)
  if (!vault || !env) return { outcome: 'not_found' }
  const isSender = imp.senderId === input.personId
  if (!canDecideImport(vault.role, env, isSender, vault.requireSecondPerson)) {
    const reason =
      vault.role === 'viewer'
        ? 'your role (viewer) cannot decide pushes'
        : vault.role === 'editor' && env.ownersOnly
          ? 'your role (editor) cannot decide pushes to owners-only environments'
          : 'this vault requires a second person to decide a push; the sender cannot decide their own'
    return { outcome: 'forbidden', reason, import: imp }
  }
  if (imp.status !== 'pending') return { outcome: 'not_pending', import: imp }
  const result = await storage.decideImport({ importId: imp.id, decision: input.decision, by: input.personId, now: input.now }, {
    vaultId: imp.vaultId,
    at: input.now,
    personId: input.personId,
    signInId: input.signInId ?? null,
    clientId: input.clientId ?? null,
    action: input.decision === 'applied' ? 'push_applied' : 'push_rejected',
    environment: imp.environment,
    names: imp.names,
    address: input.address ?? null,
    subject: null,
    detail: null,
  })
  return result.ok ? { outcome: 'decided', import: result.import } : { outcome: 'not_pending', import: result.import }
}

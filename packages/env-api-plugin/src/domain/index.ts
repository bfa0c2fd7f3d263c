import type { Actor, AdministratorActor, PersonActor } from './actor.js'
import type { DomainDeps } from './deps.js'
import { listAccessLog, recordAccess } from './access-log.js'
import { findClientRegistration, keepsClientRegistrations, saveClientRegistration } from './client-registrations.js'
import { expirePushes, listAllVaults, listAudit, pruneOldHistory, purgeSignIns, rewrapDataKeys, rotateVaultKey } from './administration.js'
import {
  addCiIdentity,
  ciIdentitiesOfVault,
  ciIdentitiesTrusting,
  ciIdentityOwnerStays,
  issueCiSignIn,
  listCiIdentities,
  removeCiIdentity,
  type NewCiIdentityInput,
} from './ci-identities.js'
import { createEnvironment } from './environments.js'
import { changeOfPush, listHistory, loadChange, planRollback, revealChange, rollBack, variableHistory } from './history.js'
import type { Person } from '../adapters/people.js'
import type { VaultAccess } from '../adapters/vault-store.js'
import { canInvite, inviteMember, listInvitations, revokeInvitation } from './invitations.js'
import { addMember, changeMemberByRule, changeRole, listMembers, removeMember, removeMemberByEmail } from './members.js'
import {
  createPush,
  decidePush,
  listPushes,
  loadPush,
  mayDecide,
  pendingPushes,
  pushesWaiting,
  pushStatus,
  revealPush,
  vaultOfPush,
  type PushView,
} from './pushes.js'
import { clientNamesOf, listSignIns, revokeAllSignIns, revokeOwnSignIns, revokeSignIn } from './sign-ins.js'
import {
  deleteVariable,
  listReferences,
  listVariableNames,
  listVariables,
  readEnvironment,
  revealValues,
  writeVariable,
  type Located,
  type VariableInput,
} from './variables.js'
import { createVault, deleteVault, renameVault, setEnvironmentRules } from './vault-admin.js'
import { allowOverrides, describeOverrides, setOverride } from './overrides.js'
import { readEnvironmentIfChanged } from './watch.js'
import { findVaultForAdministrator, listVaults, locateEnvironment, locateVault } from './vaults.js'
import { addWebhook, listWebhooks, removeWebhook, sealLegacyWebhooks } from './webhooks.js'
import { claimDeliveries, deliveryFacts, finishDelivery, sweepDeliveries } from './deliveries.js'
import {
  findAuthorizationCode,
  findRefreshToken,
  redeemAuthorizationCode,
  revokeByToken,
  rotateRefreshToken,
  saveAuthorizationCode,
  signInOfToken,
} from './tokens.js'
import type { AuthorizationCodeRecord, IssuedTokens, SignInRecord } from '../adapters/oauth-store.js'
import type { ClaimedDelivery, DeliveryAttempt } from '../adapters/webhook-store.js'
import type { Storage } from '../adapters/storage.js'
import type { CiIdentityRecord, NewCiSignIn } from '../adapters/ci-identity-store.js'

/**
 * The domain layer: the only code that knows the rules of vaults, members,
 * environments, variables, pushes and the access log. The API routes, the
 * pages, the webhook worker, housekeeping and the server's admin commands
 * call it (built once per plugin instance: createEnvkeepCore, core.ts) with
 * an actor; it answers with results, or throws a `DomainFailure` (a rule
 * said no, or the keys failed: not_configured, decrypt_failed) that each
 * surface renders its own way, or passes a `StorageError` through. It
 * imports nothing from the HTTP layers.
 */
export function createDomain(d: DomainDeps) {
  return Object.freeze({
    // vaults
    locateVault: (actor: Actor, vaultId: string) => locateVault(d, actor, vaultId),
    locateEnvironment: (actor: Actor, vaultId: string, environment: string) => locateEnvironment(d, actor, vaultId, environment),
    findVaultForAdministrator: (ref: string) => findVaultForAdministrator(d, ref),
    listVaults: (personId: string) => listVaults(d, personId),
    createVault: (actor: Actor, input: { name: string; ownerId?: string }) => createVault(d, actor, input),
    renameVault: (actor: Actor, input: { vaultId: string; name: string }) => renameVault(d, actor, input),
    deleteVault: (actor: Actor, input: { vaultId: string; confirmName: string }) => deleteVault(d, actor, input),
    setEnvironmentRules: (actor: Actor, input: Parameters<typeof setEnvironmentRules>[2]) => setEnvironmentRules(d, actor, input),
    // environments and members
    createEnvironment: (actor: Actor, input: { vaultId: string; name: string; ownersOnly: boolean }) => createEnvironment(d, actor, input),
    addMember: (actor: Actor, input: { vaultId: string; email: string; role: string; mode?: 'new' | 'any' }) => addMember(d, actor, input),
    changeRole: (actor: Actor, input: { vaultId: string; personId: string; role: string }) => changeRole(d, actor, input),
    removeMember: (actor: Actor, input: { vaultId: string; personId: string }) => removeMember(d, actor, input),
    removeMemberByEmail: (actor: Actor, input: { vaultId: string; email: string }) => removeMemberByEmail(d, actor, input),
    listMembers: (actor: Actor, vaultId: string) => listMembers(d, actor, vaultId),
    changeMemberByRule: (actor: AdministratorActor, input: Parameters<typeof changeMemberByRule>[2]) => changeMemberByRule(d, actor, input),
    // invitations (the people adapter's optional hooks)
    canInvite: () => canInvite(d),
    inviteMember: (actor: PersonActor, input: { vaultId: string; email: string; role: string; invitedBy: Person }) => inviteMember(d, actor, input),
    listInvitations: (actor: PersonActor, vaultId: string) => listInvitations(d, actor, vaultId),
    revokeInvitation: (actor: PersonActor, input: { vaultId: string; invitationId: string }) => revokeInvitation(d, actor, input),
    // variables
    readEnvironment: (actor: Actor, input: { vaultId: string; environment: string }, located?: Located) => readEnvironment(d, actor, input, located),
    readEnvironmentIfChanged: (actor: Actor, input: { vaultId: string; environment: string; ifTag: string | null }, located?: Located) =>
      readEnvironmentIfChanged(d, actor, input, located),
    revealValues: (actor: Actor, input: { vaultId: string; environment: string; name?: string }) => revealValues(d, actor, input),
    writeVariable: (actor: Actor, input: VariableInput) => writeVariable(d, actor, input),
    deleteVariable: (actor: Actor, input: { vaultId: string; environment: string; name: string }) => deleteVariable(d, actor, input),
    listVariableNames: (actor: Actor, input: { vaultId: string; environment: string }) => listVariableNames(d, actor, input),
    listVariables: (actor: Actor, input: { vaultId: string; environment: string }) => listVariables(d, actor, input),
    listReferences: (actor: Actor, input: { vaultId: string; environment: string }) => listReferences(d, actor, input),
    // personal overrides
    allowOverrides: (actor: Actor, input: { vaultId: string; environment: string; allow: boolean }) => allowOverrides(d, actor, input),
    setOverride: (actor: PersonActor, input: { vaultId: string; environment: string; name: string; value: string | null }) => setOverride(d, actor, input),
    describeOverrides: (actor: Actor, input: { vaultId: string; environment: string }) => describeOverrides(d, actor, input),
    // pushes
    createPush: (actor: PersonActor, input: Parameters<typeof createPush>[2], located?: Located) => createPush(d, actor, input, located),
    pushStatus: (actor: PersonActor, importId: string) => pushStatus(d, actor, importId),
    loadPush: (actor: Actor, input: { vaultId: string; importId: string }) => loadPush(d, actor, input),
    mayDecide: (actor: Actor, view: PushView) => mayDecide(actor, view),
    decidePush: (actor: PersonActor, input: { vaultId: string; importId: string; decision: 'applied' | 'rejected'; reason?: string }) =>
      decidePush(d, actor, input),
    revealPush: (actor: Actor, input: { vaultId: string; importId: string }) => revealPush(d, actor, input),
    pushesWaiting: (personId: string, vaults?: readonly VaultAccess[]) => pushesWaiting(d, personId, vaults),
    listPushes: (actor: Actor, input: Parameters<typeof listPushes>[2]) => listPushes(d, actor, input),
    vaultOfPush: (importId: string) => vaultOfPush(d, importId),
    pendingPushes: (vault: VaultAccess) => pendingPushes(d, vault),
    // history
    listHistory: (actor: Actor, input: Parameters<typeof listHistory>[2]) => listHistory(d, actor, input),
    loadChange: (actor: Actor, input: { vaultId: string; changeSetId: string }) => loadChange(d, actor, input),
    revealChange: (actor: Actor, input: { vaultId: string; changeSetId: string; name?: string }) => revealChange(d, actor, input),
    variableHistory: (actor: Actor, input: { vaultId: string; environment: string; name: string }) => variableHistory(d, actor, input),
    planRollback: (actor: Actor, input: Parameters<typeof planRollback>[2]) => planRollback(d, actor, input),
    rollBack: (actor: Actor, input: Parameters<typeof rollBack>[2]) => rollBack(d, actor, input),
    changeOfPush: (vault: Parameters<typeof changeOfPush>[1], pushId: string) => changeOfPush(d, vault, pushId),
    // CI identities
    addCiIdentity: (actor: Actor, input: NewCiIdentityInput) => addCiIdentity(d, actor, input),
    listCiIdentities: (actor: Actor, vaultId: string) => listCiIdentities(d, actor, vaultId),
    removeCiIdentity: (actor: Actor, input: { vaultId: string; identity: string }) => removeCiIdentity(d, actor, input),
    // the CI token exchange (oauth/grants/token-exchange.ts: no actor yet, a verified identity token)
    ciIdentitiesTrusting: (issuer: string) => ciIdentitiesTrusting(d, issuer),
    ciIdentitiesOfVault: (matches: readonly CiIdentityRecord[], ref: string) => ciIdentitiesOfVault(d, matches, ref),
    ciIdentityMaySignIn: (identity: CiIdentityRecord) => ciIdentityOwnerStays(d.storage, identity),
    issueCiSignIn: (input: NewCiSignIn) => issueCiSignIn(d, input),
    // webhooks
    addWebhook: (actor: Actor, input: Parameters<typeof addWebhook>[2]) => addWebhook(d, actor, input),
    listWebhooks: (actor: Actor, vaultId: string) => listWebhooks(d, actor, vaultId),
    removeWebhook: (actor: Actor, input: { vaultId: string; webhookId: string }) => removeWebhook(d, actor, input),
    // webhook deliveries (the delivery worker: no actor)
    claimWebhookDeliveries: (input: { leaseMs: number; limit: number; token: string }) => claimDeliveries(d, input),
    webhookDeliveryFacts: (delivery: ClaimedDelivery) => deliveryFacts(d, delivery),
    finishWebhookDelivery: (attempt: DeliveryAttempt) => finishDelivery(d, attempt),
    sweepWebhookDeliveries: (windowMs: number) => sweepDeliveries(d, windowMs),
    sealLegacyWebhooks: () => sealLegacyWebhooks(d),
    // access log
    listAccessLog: (actor: Actor, input: Parameters<typeof listAccessLog>[2]) => listAccessLog(d, actor, input),
    recordAccess: (actor: Actor, input: Parameters<typeof recordAccess>[2]) => recordAccess(d, actor, input),

    keepsClientRegistrations: () => keepsClientRegistrations(d),
    findClientRegistration: (clientId: string) => findClientRegistration(d, clientId),
    saveClientRegistration: (registration: Parameters<typeof saveClientRegistration>[1]) => saveClientRegistration(d, registration),
    // sign-ins
    listSignIns: (actor: PersonActor) => listSignIns(d, actor),
    revokeSignIn: (actor: PersonActor, signInId: string) => revokeSignIn(d, actor, signInId),
    revokeOwnSignIns: (actor: PersonActor) => revokeOwnSignIns(d, actor),
    revokeAllSignIns: (actor: AdministratorActor, personId: string) => revokeAllSignIns(d, actor, personId),
    clientNamesOf: (signIns: readonly SignInRecord[]) => clientNamesOf(d, signIns),
    // sign-ins by their secrets (the OAuth grants and the bearer check: hashes only, no actor)
    signInOfToken: (tokenHash: string, idleMs: number) => signInOfToken(d, tokenHash, idleMs),
    saveAuthorizationCode: (code: AuthorizationCodeRecord) => saveAuthorizationCode(d, code),
    findAuthorizationCode: (codeHash: string) => findAuthorizationCode(d, codeHash),
    redeemAuthorizationCode: (codeHash: string, signIn: Omit<SignInRecord, 'lastUsedAt' | 'revokedAt'>, tokens: IssuedTokens, now: Date) =>
      redeemAuthorizationCode(d, codeHash, signIn, tokens, now),
    findRefreshToken: (tokenHash: string) => findRefreshToken(d, tokenHash),
    rotateRefreshToken: (tokenHash: string, tokens: IssuedTokens, now: Date) => rotateRefreshToken(d, tokenHash, tokens, now),
    revokeByToken: (tokenHash: string, clientId: string) => revokeByToken(d, tokenHash, clientId),
    // the server administrator's own
    listAudit: (actor: AdministratorActor, input: { limit: number }) => listAudit(d, actor, input),
    listAllVaults: (actor: AdministratorActor) => listAllVaults(d, actor),
    rotateDataKey: (actor: AdministratorActor, vaultId: string) => rotateVaultKey(d, actor, vaultId),
    rewrapDataKeys: (actor: AdministratorActor, rewrap: Parameters<typeof rewrapDataKeys>[2]) => rewrapDataKeys(d, actor, rewrap),
    /** the storage's request counters every process shares (PostgreSQL), or null: each process counts in memory */
    sharedCounters: () => sharedCounters(d.storage),
    // housekeeping (the periodic work: no actor)
    expirePushes: () => expirePushes(d),
    purgeSignIns: () => purgeSignIns(d),
    pruneHistory: () => pruneOldHistory(d),
  })
}

export type Domain = ReturnType<typeof createDomain>

/** Counting requests and reading a count back, in counters every server process shares. */
export type SharedCounters = Required<Pick<Storage, 'countRequest' | 'peekRequests'>>

function sharedCounters(storage: Storage): SharedCounters | null {
  const { countRequest, peekRequests } = storage
  if (!countRequest || !peekRequests) return null
  return { countRequest: countRequest.bind(storage), peekRequests: peekRequests.bind(storage) }
}

export { ADMINISTRATOR, ADMINISTRATOR_CLIENT, authorOf, entryFor, personActor, type Actor, type AdministratorActor, type PersonActor } from './actor.js'
export type { DomainDeps } from './deps.js'
export { CI_ISSUER_PRESETS, isCiPrincipal, type CiVaultAccess, type NewCiIdentityInput } from './ci-identities.js'
export { DomainFailure, isRefusal, KEY_FAILURES, vaultTag, type FailureKind } from './failure.js'
export { SIGN_IN_NOT_FOUND, signInState } from './sign-ins.js'
export { INVITATION_NOT_FOUND, NEEDS_ACCOUNT, type InviteOutcome } from './invitations.js'
export { CHANGE_NOT_FOUND, HISTORY_PAGE, pruneHistory, type ChangeView, type RollbackPlan } from './history.js'
export { ENVIRONMENT_CHANGED } from './changes.js'
export { defaultPlan, limitOf } from './limits.js'
export {
  canDecideImport,
  canManageVault,
  canReadEnvironment,
  canWriteEnvironment,
  ciLimitRefusal,
  decideRefusal,
  mayAccess,
  revealRefusal,
  roleRefusal,
  writeRefusal,
} from './permissions.js'
export {
  isWaiting,
  MAX_REJECT_REASON,
  pushProblem,
  PUSH_NOT_FOUND,
  WAITING_PER_VAULT,
  WAITING_VAULTS,
  type PushesWaiting,
  type PushInput,
  type PushView,
} from './pushes.js'
export { sameVaultName, secondPersonRequired } from './vault-admin.js'
export {
  DEFAULT_ENVIRONMENTS,
  ENVIRONMENT_NAME_RE,
  environmentNameProblem,
  isRole,
  MAX_NAME_LENGTH,
  MAX_REASON,
  MAX_REFUSED,
  MAX_VALUE_BYTES,
  MAX_VAULT_NAME,
  NAME_RE,
  nameProblem,
  RESERVED_PREFIX,
  ROLES,
  valueProblem,
  vaultNameProblem,
} from './rules.js'
export { VARIABLE_NOT_FOUND, type Located, type ReadResult } from './variables.js'
export { DELIVERIES_SHOWN, MAX_WEBHOOKS, notifyWebhooks, WEBHOOK_EVENTS, WEBHOOK_FORMATS, WEBHOOK_NOT_FOUND, type WebhookView } from './webhooks.js'
export { isPublicAddress, PRIVATE_REFUSAL, webhookUrlProblem, webhookUrlShapeProblem, type ResolveHost } from './webhook-url.js'
export { ENVIRONMENT_NOT_FOUND, VAULT_NOT_FOUND, VAULT_OR_ENVIRONMENT, vaultIdOrNull } from './vaults.js'

/**
 * The same domain, with every failure passed through `convert` first (a
 * surface turns refusals into its own errors once, here, instead of at
 * every call).
 */
export function withFailuresAs(domain: Domain, convert: (err: unknown) => unknown): Domain {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(domain)) {
    const fn = v as (...a: unknown[]) => unknown
    out[k] = (...a: unknown[]) => {
      try {
        const r = fn(...a)
        return r instanceof Promise ? r.catch((err: unknown) => Promise.reject(convert(err))) : r
      } catch (err) {
        throw convert(err)
      }
    }
  }
  return Object.freeze(out) as Domain
}

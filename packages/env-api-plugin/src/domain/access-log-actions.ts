/**
 * Every action an access-log entry can record: the one list. The type is
 * derived from it; the pages' filter and the API offer exactly these, and
 * storage keeps the action as plain text (no database constraint repeats
 * the list, so a new action needs no migration).
 */
export const ACCESS_ACTIONS = Object.freeze([
  'read',
  'refused',
  'push_created',
  'push_applied',
  'push_rejected',
  'push_expired',
  'variable_set',
  'variable_deleted',
  'member_added',
  'member_changed',
  'member_removed',
  'environment_created',
  'vault_created',
  'history_revealed',
  'change_reverted',
  'environment_restored',
  'vault_renamed',
  'environment_changed',
  'invitation_sent',
  'invitation_revoked',
  'webhook_added',
  'webhook_removed',
  'override_set',
  'override_deleted',
] as const)

export type AccessAction = (typeof ACCESS_ACTIONS)[number]

/** True when `s` names an access-log action (for filters read from a query string). */
export function isAccessAction(s: string): s is AccessAction {
  return (ACCESS_ACTIONS as readonly string[]).includes(s)
}

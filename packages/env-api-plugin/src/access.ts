/**
 * Who may do what: the rules live in the domain layer (domain/permissions.ts); kept here for
 * existing imports. `mayAccess` is the rule (a CI identity's environment list included);
 * `canReadEnvironment`/`canWriteEnvironment` are its role part.
 */
export { canDecideImport, canManageVault, canReadEnvironment, canWriteEnvironment, mayAccess } from './domain/permissions.js'

/** Who may do what: the rules live in the domain layer (domain/permissions.ts); kept here for existing imports. */
export { canDecideImport, canManageVault, canReadEnvironment, canWriteEnvironment } from './domain/permissions.js'

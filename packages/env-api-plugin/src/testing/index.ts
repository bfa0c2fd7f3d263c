export * from './oauth-store-contract.js'
export * from './vault-store-contract.js'

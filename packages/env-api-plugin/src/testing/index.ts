export * from './oauth-store-contract.js'

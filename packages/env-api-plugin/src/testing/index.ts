export * from './oauth-store-contract.js'
export * from './vault-store-contract.js'
export { createTestKeyring, createBrokenKeyring } from './keyring.js'
export { mintSignIn, type MintSignInInput, type MintedSignIn } from './sign-in.js'

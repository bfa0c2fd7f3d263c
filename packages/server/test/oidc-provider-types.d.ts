// The little of oidc-provider 9 the tests use (it ships no types; @types/oidc-provider is not installed).
declare module 'oidc-provider' {
  import type { Server } from 'node:http'

  interface ProviderAccount {
    accountId: string
    claims(): Promise<Record<string, unknown>>
  }

  interface ProviderConfiguration {
    clients?: Record<string, unknown>[]
    claims?: Record<string, string[]>
    scopes?: string[]
    pkce?: { required?: () => boolean }
    cookies?: { keys?: string[] }
    features?: Record<string, { enabled: boolean }>
    findAccount?(ctx: unknown, id: string): Promise<ProviderAccount | undefined>
  }

  export default class Provider {
    constructor(issuer: string, configuration?: ProviderConfiguration)
    listen(port: number): Server
  }
}

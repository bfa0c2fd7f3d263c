import type { Test } from 'tap'
import Provider from 'oidc-provider'
import type { Page } from 'playwright-core'
import { freePort } from '@envkeep/test-support'

export interface TestIdentity {
  email?: string
  email_verified?: boolean
  name?: string
  groups?: string[]
}

/**
 * A real OpenID Connect provider on loopback for tests (oidc-provider, not a mock of ours):
 * issuer `http://localhost:<port>`, one confidential client for envkeep's callback, and its
 * development login form (any password; the login names the identity: its `sub`).
 * `people` may be changed between sign-ins (claims are read at each one).
 */
export async function startProvider(t: Test, o: { redirectUri: string; clientSecret: string; people: Map<string, TestIdentity> }) {
  const port = await freePort()
  const issuer = `http://localhost:${port}`
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'envkeep',
        client_secret: o.clientSecret,
        redirect_uris: [o.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    pkce: { required: () => true },
    cookies: { keys: ['canary-provider-cookie-key'] },
    features: { devInteractions: { enabled: true } },
    async findAccount(_ctx, id) {
      return {
        accountId: id,
        async claims() {
          return { sub: id, ...(o.people.get(id) ?? {}) }
        },
      }
    },
  })
  const server = provider.listen(port)
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { issuer }
}

/** At the provider's development pages: signs in as `login`, and consents when asked; returns once back at `base`. */
export async function providerLogin(page: Page, login: string, base: string): Promise<void> {
  await page.locator('input[name="login"]').fill(login)
  await page.locator('input[name="password"]').fill('any')
  const at = page.url()
  await page.locator('button[type="submit"]').first().click()
  await page.waitForURL((u) => u.href !== at)
  await page.waitForLoadState()
  if (!page.url().startsWith(base)) {
    await page.getByRole('button', { name: 'Continue' }).click()
    await page.waitForURL((u) => u.href.startsWith(base))
  }
}

#!/usr/bin/env node
// `pnpm test:postgres`: the plugin's /api/env, OAuth, crypto and push-decision tests and the
// server's page and API tests once more,
// on @envkeep/storage-postgres (ENVKEEP_TEST_STORAGE=postgres). Needs ENVKEEP_TEST_DATABASE_URL
// (a server where the tests may create databases; CI starts one). Without it, outside CI, it
// says so and skips; in CI it fails.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

if (!process.env.ENVKEEP_TEST_DATABASE_URL) {
  if (process.env.CI === 'true') {
    console.error('test:postgres: CI=true and ENVKEEP_TEST_DATABASE_URL is not set')
    process.exit(1)
  }
  console.log('test:postgres: skipped (ENVKEEP_TEST_DATABASE_URL is not set; `.ci/postgres.sh start DIR` prints one)')
  process.exit(0)
}
const files = [
  'packages/env-api-plugin/test/api/**/*.test.ts',
  'packages/env-api-plugin/test/oauth/**/*.test.ts',
  'packages/env-api-plugin/test/crypto/**/*.test.ts',
  'packages/env-api-plugin/test/imports-service.test.ts',
  'packages/env-api-plugin/test/pages/history.test.ts',
  'packages/env-api-plugin/test/pages/settings.test.ts',
  'packages/env-api-plugin/test/pages/paste.test.ts',
  'packages/env-api-plugin/test/pages/second-person.test.ts',
  'packages/env-api-plugin/test/pages/unreadable.test.ts',
  'packages/env-api-plugin/test/webhooks/sealed-url.test.ts',
  'packages/server/test/rotation-write.test.ts',
  'packages/server/test/history-pages.test.ts',
  'packages/server/test/references.test.ts',
  'packages/server/test/overrides.test.ts',
  'packages/server/test/invitations.test.ts',
  'packages/server/test/invitation-hijack.test.ts',
  'packages/server/test/session-tossing.test.ts',
  'packages/server/test/second-factor.test.ts',
  'packages/server/test/passkeys.test.ts',
  'packages/server/test/oidc-sso.test.ts',
  // the server's pages and API over buildTestApp (accounts, sessions, CSRF, not-found, proxies)
  'packages/server/test/account-pages.test.ts',
  'packages/server/test/build-app.test.ts',
  'packages/server/test/csrf-cross-origin.test.ts',
  'packages/server/test/not-found.test.ts',
  'packages/server/test/trust-proxy.test.ts',
]
// the plugin's tests take their store from the PostgreSQL package's side (the plugin does not
// depend on @envkeep/storage-postgres, which depends on it)
const storageModule = fileURLToPath(new URL('../packages/storage-postgres/test/plugin-storage.ts', import.meta.url))
const r = spawnSync('tap', files, {
  stdio: 'inherit',
  env: { ...process.env, ENVKEEP_TEST_STORAGE: 'postgres', ENVKEEP_TEST_STORAGE_MODULE: storageModule },
  shell: false,
})
process.exit(r.status ?? 1)

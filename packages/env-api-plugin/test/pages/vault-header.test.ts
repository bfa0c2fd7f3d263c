import t, { type Test } from 'tap'
import { createTestPeople, build, session } from './helpers.js'

// Issue 25 (outside tests, 7): History and Settings lost the vault's tab bar; History had no
// way to switch environment; webhooks hung off the vault page's header instead of Settings;
// a variable had no Copy of its own; the consent and error pages built their own top bar.

const SIGN_OUT = '/logout-canary'

async function setup(t: Test) {
  const people = { ...createTestPeople(), signOutUrl: () => SIGN_OUT }
  const b = await build(t, { people })
  return { b, owner: session(b.app, 'owner'), editor: session(b.app, 'editor') }
}

function tabBar(body: string): string[] {
  const nav = /<nav class="tabs" aria-label="Vault">([\s\S]*?)<\/nav>/.exec(body)?.[1] ?? ''
  return [...nav.matchAll(/<a [^>]*>([^<]*)<\/a>/g)].map((m) => m[1] as string)
}

function current(body: string): string | undefined {
  return /<nav class="tabs" aria-label="Vault">[\s\S]*?<a [^>]*aria-current="page"[^>]*>([^<]*)<\/a>/.exec(body)?.[1]
}

t.test('History, Settings and Webhooks keep the vault’s tab bar, with their tab current', async (t) => {
  const { b, owner } = await setup(t)
  const tabs = ['Variables', 'Pushes', 'History', 'Members', 'Access log', 'Settings']
  for (const [url, tab] of [
    [`/v/${b.vaultId}`, 'Variables'],
    [`/v/${b.vaultId}/history/development`, 'History'],
    [`/v/${b.vaultId}/settings`, 'Settings'],
    [`/v/${b.vaultId}/webhooks`, 'Settings'],
  ] as const) {
    const page = await owner.get(url)
    t.equal(page.statusCode, 200, url)
    t.same(tabBar(page.body), tabs, `${url}: the tab bar`)
    t.equal(current(page.body), tab, `${url}: ${tab} current`)
  }
})

t.test('History switches between the environments the person may read', async (t) => {
  const { b, owner, editor } = await setup(t)
  const page = await owner.get(`/v/${b.vaultId}/history/preview`)
  const envs = /<nav class="envs" aria-label="Environments">([\s\S]*?)<\/nav>/.exec(page.body)?.[1] ?? ''
  for (const e of ['development', 'preview', 'production']) t.match(envs, `href="/v/${b.vaultId}/history/${e}"`, e)
  t.match(envs, /aria-current="true" class="current">preview/)
  const theirs = await editor.get(`/v/${b.vaultId}/history/development`)
  t.notMatch(theirs.body, `/history/production"`, 'an editor is not offered owners-only history')
})

t.test('webhooks are reached from Settings, by owners', async (t) => {
  const { b, owner, editor } = await setup(t)
  t.match((await owner.get(`/v/${b.vaultId}/settings`)).body, `<a class="button secondary" href="/v/${b.vaultId}/webhooks">Webhooks</a>`)
  t.notMatch((await editor.get(`/v/${b.vaultId}/settings`)).body, '/webhooks"')
})

t.test('each variable has its own Copy', async (t) => {
  const { b, editor } = await setup(t)
  await editor.get(`/v/${b.vaultId}?env=development`)
  for (const name of ['A', 'B']) await editor.post(`/v/${b.vaultId}/variables/add`, { environment: 'development', name, value: `${name}-canary` })
  const page = await editor.get(`/v/${b.vaultId}?env=development`)
  for (const name of ['A', 'B']) t.match(page.body, `data-reveal-copy="${name}" aria-label="Copy the value of ${name}">Copy</button>`)
  for (const name of ['A', 'B']) t.notMatch(page.body, `${name}-canary`, 'no value in the page before a reveal')
})

t.test('the error page has the shared top bar (sign-out link)', async (t) => {
  const { b, owner } = await setup(t)
  const missing = await owner.get(`/v/${b.vaultId}/changes/00000000-0000-4000-8000-000000000000`)
  t.equal(missing.statusCode, 404)
  t.match(missing.body, `<a class="sign-out" href="${SIGN_OUT}">Sign out</a>`)
  const vault = await owner.get(`/v/${b.vaultId}`)
  t.match(vault.body, `<a class="sign-out" href="${SIGN_OUT}">Sign out</a>`, 'as on the other pages')
})

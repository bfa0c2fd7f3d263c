import { NAME_RE as DOTENV_NAME_RE } from '@envkeep/dotenv'
import t from 'tap'
import type { EnvironmentInfo, VaultAccess } from '../../src/index.js'
import { mayAccess } from '../../src/domain/permissions.js'
import { AGAIN, retryOptimistic } from '../../src/domain/retry.js'
import { NAME_RE } from '../../src/domain/rules.js'

const dev: EnvironmentInfo = { name: 'development', ownersOnly: false }
const prod: EnvironmentInfo = { name: 'production', ownersOnly: true }

function vault(role: VaultAccess['role'], ciEnvironments?: readonly string[] | null): VaultAccess {
  const v = { id: 'v', name: 'shop', plan: 'self-hosted', requireSecondPerson: false, environments: [dev, prod], createdAt: new Date(0), role }
  return (ciEnvironments === undefined ? v : { ...v, ciEnvironments }) as unknown as VaultAccess
}

t.test('mayAccess: the role rule, then a CI identity environment list, for reading and writing alike', async (t) => {
  for (const mode of ['read', 'write'] as const) {
    t.equal(mayAccess(vault('owner'), prod, mode), true, `owner ${mode}s owners-only`)
    t.equal(mayAccess(vault('editor'), dev, mode), true, `editor ${mode}s development`)
    t.equal(mayAccess(vault('editor'), prod, mode), false, `editor never ${mode}s owners-only`)
    t.equal(mayAccess(vault('viewer'), dev, mode), false, `viewer never ${mode}s`)
    t.equal(mayAccess(vault('owner', ['development']), prod, mode), false, `a CI identity limited to development never ${mode}s production`)
    t.equal(mayAccess(vault('owner', ['production']), prod, mode), true, 'its own environment')
    t.equal(mayAccess(vault('owner', null), prod, mode), true, 'a CI identity without a list: its role decides')
  }
})

t.test('the variable-name pattern is the .env grammar’s own', async (t) => {
  t.equal(NAME_RE, DOTENV_NAME_RE)
})

t.test('retryOptimistic: tries again on AGAIN, at most the attempts given, then throws naming what kept changing', async (t) => {
  const seen: number[] = []
  t.equal(
    await retryOptimistic(
      3,
      () => 'never',
      async (n) => (seen.push(n), n < 3 ? AGAIN : 'done'),
    ),
    'done',
  )
  t.same(seen, [1, 2, 3])
  let runs = 0
  await t.rejects(
    retryOptimistic(
      5,
      () => 'the environment kept changing',
      async () => {
        runs++
        return AGAIN
      },
    ),
    { message: 'envkeep: the environment kept changing' },
  )
  t.equal(runs, 5)
  await t.rejects(
    retryOptimistic(
      5,
      () => 'x',
      async () => Promise.reject(new Error('a refusal passes through at once')),
    ),
    { message: 'a refusal passes through at once' },
  )
})

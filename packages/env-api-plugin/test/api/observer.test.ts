import t from 'tap'
import type { EnvApiObserver } from '../../src/index.js'
import { build } from './helpers.js'

t.test('the observer hears token checks and operations by outcome, with fixed words only', async (t) => {
  const heard: string[] = []
  const observer: EnvApiObserver = {
    tokenCheck: (o) => heard.push(`token ${o}`),
    apiOperation: (op, o) => heard.push(`${op} ${o}`),
  }
  const b = await build(t, { extra: { observer } })
  const vault = await b.createVault('alice', { name: 'secret-vault-name' })
  await b.setValues(vault, 'development', { SECRET_NAME: 'secret-value' })
  const token = await b.signIn('alice')
  t.equal((await b.get('/api/env/vaults', null)).statusCode, 401)
  t.equal((await b.get('/api/env/vaults', `ekat_${'Q'.repeat(43)}`)).statusCode, 401)
  t.equal((await b.get(`/api/env/${vault}/development`, token)).statusCode, 200)
  t.equal((await b.get(`/api/env/${vault}/nope`, token)).statusCode, 404)
  t.equal((await b.push(vault, 'development', token, { variables: { OTHER: 'x' } })).statusCode, 201)
  t.same(heard, [
    'token missing',
    'list unauthorized',
    'token invalid',
    'list unauthorized',
    'token valid',
    'read ok',
    'token valid',
    'read not_found',
    'token valid',
    'push ok',
  ])
})

t.test('an observer that throws changes no answer', async (t) => {
  const boom = () => {
    throw new Error('observer failed')
  }
  const b = await build(t, { extra: { observer: { tokenCheck: boom, apiOperation: boom, webhookDelivery: boom } } })
  const vault = await b.createVault('alice')
  const token = await b.signIn('alice')
  t.equal((await b.get(`/api/env/${vault}/development`, token)).statusCode, 200)
  t.equal((await b.get('/api/env/vaults', null)).statusCode, 401)
})

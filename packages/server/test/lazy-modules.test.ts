import t from 'tap'
import { registerHooks } from 'node:module'
import { createLocalKeyring } from '@envkeep/env-api-plugin'
import { randomBytes } from 'node:crypto'
import { createMailer } from '../src/mailer.js'
import { buildTestApp } from './helpers.js'
import { smtpSink } from './smtp-sink.js'

// Issue 20, item 5: the passkey library is loaded at the first passkey request and nodemailer
// at the first message, not at start. This file is its own process, so each test below is the
// library's first use.

/** Makes `import(specifier)` fail until deregistered, as a broken install would. */
function failImport(specifier: string): { deregister(): void } {
  return registerHooks({
    resolve(s, context, next) {
      if (s === specifier) throw new Error(`canary: ${specifier} cannot be loaded`)
      return next(s, context)
    },
  })
}

t.test('a passkey page as the first request: a failed load answers 500 with a ref, the next request loads it', async (t) => {
  const s = await buildTestApp(t, { env: { ENVKEEP_BASE_URL: 'http://localhost:8080' }, keyring: createLocalKeyring(new Uint8Array(randomBytes(32))) })

  const broken = failImport('@simplewebauthn/server')
  const failed = await s.app.inject({ method: 'GET', url: '/login/passkey' })
  broken.deregister()
  t.equal(failed.statusCode, 500, 'the request fails, the server does not')
  const ref = /Reference: ([A-Z0-9]{6,})/.exec(failed.body)?.[1]
  t.ok(ref, 'the page gives a ref')
  t.ok(ref && s.log.text.includes(ref) && s.log.text.includes('canary: @simplewebauthn/server cannot be loaded'), 'the ref and the cause are in the log')

  const page = await s.app.inject({ method: 'GET', url: '/login/passkey' })
  t.equal(page.statusCode, 200, 'the next request loads the library')
  t.match(page.body, /challenge/, 'with the options the browser needs')
})

t.test('the mailer loads nodemailer at its first message; a failed load fails that send only', async (t) => {
  const sink = await smtpSink(t, { user: 'mailer', password: 'canary-smtp-password' })
  const mailer = createMailer({ url: `smtp://mailer:canary-smtp-password@127.0.0.1:${sink.port}`, from: 'envkeep@example.com' })
  t.teardown(() => mailer.close())
  const message = { to: 'ana@example.com', subject: 'Invitation', text: 'canary-invitation-text' }

  const broken = failImport('nodemailer')
  await t.rejects(mailer.send(message), /canary: nodemailer cannot be loaded/)
  broken.deregister()
  t.equal(sink.messages.length, 0)

  await mailer.send(message)
  t.equal(sink.messages.length, 1, 'the next message loads it and is sent')
  t.match(sink.messages[0]?.text, /canary-invitation-text/)
})

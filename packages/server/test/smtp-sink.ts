import { SMTPServer } from 'smtp-server'

export interface ReceivedMail {
  readonly from: string
  readonly to: readonly string[]
  /** the message as sent (headers and body, transfer encoding undone for quoted-printable) */
  readonly text: string
}

/**
 * A local SMTP server for tests, on 127.0.0.1 at a free port: plain SMTP (no STARTTLS), AUTH
 * with one user, keeping every message. Closed at teardown.
 */
export async function smtpSink(
  t: { teardown(fn: () => unknown): void },
  o: { user: string; password: string },
): Promise<{ port: number; messages: ReceivedMail[]; logins: string[] }> {
  const messages: ReceivedMail[] = []
  const logins: string[] = []
  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === o.user && auth.password === o.password) {
        logins.push(auth.username ?? '')
        cb(null, { user: auth.username })
      } else cb(new Error('Invalid username or password'))
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8')
        const qp = /content-transfer-encoding:\s*quoted-printable/i.test(raw)
        const text = qp ? raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(Number.parseInt(h, 16))) : raw
        const from = session.envelope.mailFrom
        messages.push({ from: from ? from.address : '', to: session.envelope.rcptTo.map((r) => r.address), text })
        cb()
      })
    },
  })
  const port = await new Promise<number>((resolve, reject) => {
    server.server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve((server.server.address() as { port: number }).port))
  })
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { port, messages, logins }
}

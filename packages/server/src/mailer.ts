import { loadOnce } from '@envkeep/env-api-plugin'
import type { SmtpConfig } from './config.js'

export interface MailMessage {
  readonly to: string
  readonly subject: string
  readonly text: string
}

/** Sends email; the server's one use is invitations. */
export interface Mailer {
  /** Resolves once the SMTP server took the message; rejects with an error that never holds the credentials. */
  send(message: MailMessage): Promise<void>
  close(): void
}

/** Why a message was not sent, for the log: codes only (a low-level message could quote the server's dialogue). */
export function mailFailure(err: unknown): { code: string | null; responseCode: number | null } {
  const e = err as { code?: unknown; responseCode?: unknown } | null
  return {
    code: typeof e?.code === 'string' ? e.code : null,
    responseCode: typeof e?.responseCode === 'number' ? e.responseCode : null,
  }
}

/**
 * Email through nodemailer's SMTP transport, from ENVKEEP_SMTP_URL (credentials, host, port,
 * smtps for TLS, STARTTLS when offered) and ENVKEEP_SMTP_FROM. nodemailer's own logging stays
 * off (its debug log would show the AUTH exchange); config.ts refuses `logger` and `debug` in
 * the URL's query, which would override that. Short timeouts: an owner waits for the page.
 */
export function createMailer(smtp: SmtpConfig): Mailer {
  // nodemailer is loaded at the first message, not at start: most servers send an invitation
  // now and then, and it holds about 3.3 MB of heap once loaded (issue 20). A load that fails
  // fails that send (as an unreachable SMTP server does) and is tried again by the next one.
  const open = loadOnce(async () => {
    const { createTransport } = await import('nodemailer')
    return createTransport(
      { url: smtp.url, logger: false, debug: false, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 },
      { from: smtp.from },
    )
  })
  return {
    async send(m) {
      await (await open()).sendMail({ to: m.to, subject: m.subject, text: m.text })
    },
    close() {
      void open.current?.then(
        (t) => t.close(),
        () => undefined,
      )
    },
  }
}

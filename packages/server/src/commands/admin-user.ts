import { randomUUID } from 'node:crypto'
import { StorageError } from '@envkeep/env-api-plugin'
import { emailProblem, nameProblem } from '../pages/account-pages.js'
import { LOGIN_LINK_TTL_MS } from '../oidc/oidc-pages.js'
import { hashPassword, hashToken, newToken, passwordProblem } from '../secrets.js'
import { signinEvent } from '../factors.js'
import { CommandFailure, openData, readStdin, report, requireAccount, requireString, UsageFailure, type CommandContext } from './context.js'

/** `admin user create --email E --name N --password-stdin` */
export async function adminUserCreate(ctx: CommandContext): Promise<number> {
  const email = requireString(ctx, 'email')
  const name = requireString(ctx, 'name')
  if (ctx.flags['password-stdin'] !== true)
    throw new UsageFailure('--password-stdin is required (the password is read from stdin, never from the command line)')
  if (emailProblem(email)) throw new UsageFailure('--email is not a valid email address')
  const nameWrong = nameProblem(name)
  if (nameWrong) throw new UsageFailure(`--name: ${nameWrong}`)
  const password = await readStdin(ctx.deps.stdin)
  const problem = passwordProblem(password)
  if (problem) throw new CommandFailure(problem)
  const data = await openData(ctx.config)
  try {
    const account = await data.accounts
      .createAccount({ id: randomUUID(), email, name, passwordHash: await hashPassword(password) }, ctx.now())
      .catch((err: unknown) => {
        if (err instanceof StorageError && err.sqlstate === '23505') throw new CommandFailure('an account with that email exists already')
        throw err
      })
    // a first account makes any printed setup link useless
    await data.accounts.clearSetupTokens()
    return report(ctx, `account created: ${account.email} (${account.id})`, {
      account: { id: account.id, email: account.email, name: account.name },
    })
  } finally {
    await data.close()
  }
}

/**
 * `admin user reset-factors --email E`: for a lost phone. Removes every second factor and
 * recovery code of the account and ends its web sessions; logged as a sign-in event.
 */
export async function adminUserResetFactors(ctx: CommandContext): Promise<number> {
  const email = requireString(ctx, 'email')
  const data = await openData(ctx.config)
  try {
    const account = await requireAccount(data, email)
    const removed = await data.accounts.resetFactors(account.id)
    const sessions = await data.accounts.deleteSessionsOf(account.id)
    await signinEvent(data.accounts, null, account.id, 'factors_reset', `by the server administrator: ${removed} factor(s)`, ctx.now())
    return report(ctx, `${removed} second factor(s) and the recovery codes removed, ${sessions} web session(s) ended for ${account.email}`, {
      email: account.email,
      removed,
      sessions,
    })
  } finally {
    await data.close()
  }
}

/**
 * `admin login-link --email E`: the break-glass path when password sign-in is off (or the
 * identity provider is down): a one-time link, 15 minutes, printed here only (its hash stored),
 * that signs the person in once. Logged as a sign-in event, and its use too.
 */
export async function adminLoginLink(ctx: CommandContext): Promise<number> {
  const email = requireString(ctx, 'email')
  const data = await openData(ctx.config)
  try {
    const account = await requireAccount(data, email)
    const token = newToken()
    const now = ctx.now()
    const expiresAt = new Date(now.getTime() + LOGIN_LINK_TTL_MS)
    await data.accounts.createLoginLink(hashToken(token), account.id, now, expiresAt)
    await signinEvent(data.accounts, null, account.id, 'link_created', 'break-glass link by the server administrator', now)
    const link = `${ctx.config.baseUrl}/login/link/${token}`
    return report(
      ctx,
      `a one-time sign-in link for ${account.email} (works once, until ${expiresAt.toISOString().slice(0, 16).replace('T', ' ')} UTC):\n${link}`,
      {
        email: account.email,
        link,
        expiresAt: expiresAt.toISOString(),
      },
    )
  } finally {
    await data.close()
  }
}

import { BASE_URL_HELP, type Command } from '../command.js'
import { CliError } from '../errors.js'
import { revokeToken } from '../oauth.js'
import { EXIT } from '../exit-codes.js'
import { clearFallback } from '../fallback.js'

export const logout: Command = {
  name: 'logout',
  summary: 'end the sign-in on the server and forget it here',
  help: `Usage: envkeep logout [--base-url URL]

Revokes the sign-in on the server (which ends it for good) and removes it from
this machine, with the server's offline copies (--fallback). Signed out already:
says so and exits 0. If the server cannot be reached, the sign-in is still forgotten
here, and the command fails so you know it may still be valid on the server.

Options:
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: {},
  positionals: [0, 0],
  async run(ctx, { values }) {
    let baseUrl: string
    try {
      baseUrl = await ctx.resolveBaseUrl(values['base-url'] as string | undefined)
    } catch (err) {
      if (err instanceof CliError && err.exitCode === EXIT.needsSignIn) {
        ctx.err('Not signed in to any server; nothing to do.\n')
        return 0
      }
      throw err
    }
    await clearFallback(ctx.store.dir, baseUrl)
    const removed = await ctx.store.withLock(async (tx) => {
      const file = await tx.read()
      const s = file.signIns[baseUrl]
      if (!s) return null
      delete file.signIns[baseUrl]
      if (file.current === baseUrl) file.current = null
      await tx.write(file)
      return s
    })
    if (!removed) {
      ctx.err(`Not signed in to ${baseUrl}; nothing to do.\n`)
      return 0
    }
    try {
      await revokeToken(removed, removed.refreshToken, { fetch: ctx.deps.fetch, timeoutMs: ctx.deps.timeoutMs })
    } catch (err) {
      const e = err instanceof CliError ? err : new CliError('could not end the sign-in on the server', { cause: err })
      throw new CliError(`forgot the sign-in here, but ${e.message}`, {
        ...(e.server ? { server: e.server } : {}),
        ...(e.network ? { network: e.network } : {}),
        hint: 'the sign-in may stay valid on the server until it expires; an owner can end it there',
      })
    }
    ctx.err(`Signed out of ${baseUrl}.\n`)
    return 0
  },
}

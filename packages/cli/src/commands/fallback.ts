import type { Command } from '../command.js'
import { usageError } from '../errors.js'
import { clearFallback } from '../fallback.js'

export const fallback: Command = {
  name: 'fallback',
  summary: 'manage the offline copies: envkeep fallback clear',
  help: `Usage: envkeep fallback clear [--base-url URL]

Deletes the encrypted offline copies kept by --fallback: all of them, or only
those of one server with --base-url. A revoked sign-in deletes its server's
copies by itself.

Options:
  --base-url URL   only this server's copies
  -h, --help       show this help`,
  options: {},
  positionals: [1, 1],
  async run(ctx, { values, positionals }) {
    if (positionals[0] !== 'clear') throw usageError(`fallback: unknown action "${positionals[0]!.slice(0, 20)}"`, 'the only action is: envkeep fallback clear')
    const flag = values['base-url'] as string | undefined
    const baseUrl = flag === undefined ? null : await ctx.resolveBaseUrl(flag)
    const n = await clearFallback(ctx.store.dir, baseUrl)
    ctx.err(`Deleted ${n} offline cop${n === 1 ? 'y' : 'ies'}${baseUrl ? ` of ${baseUrl}` : ''}.\n`)
    return 0
  },
}

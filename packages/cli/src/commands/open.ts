import { BASE_URL_HELP, type Command } from '../command.js'
import { CliError } from '../errors.js'
import { findLink } from '../link.js'
import { serverOf } from '../target.js'
import { resolveVault } from '../resolve-vault.js'
import { reviewLinkOf } from '../sent-pushes.js'
import { sameOriginUrl } from '../untrusted.js'

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const open: Command = {
  name: 'open',
  summary: "open the vault's page, or a push's review page, in the browser",
  help: `Usage: envkeep open [<vault> | <push-id>] [--print] [--base-url URL]

Opens the vault's page (the linked folder's vault when none is given), or the
review page of a push sent from this machine, in your browser (as login does).
When no browser can be started, it prints the link. Only pages of the server
itself are ever opened.

Options:
  --print          print the link instead of opening it
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { print: { type: 'boolean' } },
  positionals: [0, 1],
  async run(ctx, { values, positionals }) {
    const given = positionals[0]
    const link = given === undefined ? findLink(ctx.deps.cwd) : null
    const baseUrl = await serverOf(ctx, values['base-url'] as string | undefined, link?.link ?? null)
    let url: string
    const review = given !== undefined && UUID_RE.test(given) ? await reviewLinkOf(ctx.store.dir, given, baseUrl) : null
    if (review) url = review
    else if (given !== undefined) url = `${baseUrl}/v/${encodeURIComponent((await resolveVault(ctx.api(baseUrl), given)).id)}`
    else if (link) url = `${baseUrl}/v/${encodeURIComponent(link.link.vault.id)}`
    else throw new CliError('open what? give a vault or a push id, or link this folder (envkeep link)')
    const safe = sameOriginUrl(url, baseUrl, 'could not open the page')
    if (values.print === true) {
      ctx.out(`${safe}\n`)
      return 0
    }
    // the opener of login; when no browser can start (no display, no opener), the link to open by hand
    const opened = await ctx.deps.openBrowser(safe).then(
      () => true,
      () => false,
    )
    if (opened) ctx.err(`Opened ${safe}\n`)
    else {
      ctx.err('Could not start a browser; open this link:\n')
      ctx.out(`${safe}\n`)
    }
    return 0
  },
}

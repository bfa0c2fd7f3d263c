import { BASE_URL_HELP, type Command } from '../command.js'
import { CliError } from '../errors.js'

const CLIENTS = ['claude', 'cursor', 'vscode'] as const
type McpClient = (typeof CLIENTS)[number]

/** The ready-to-paste configuration of each MCP client for `url` (JSON built with JSON.stringify, never by hand). */
export function mcpSnippets(url: string): Record<McpClient, string> {
  return {
    claude: `Claude Code (run once):\n  claude mcp add --transport http envkeep ${url}\n`,
    cursor: `Cursor (~/.cursor/mcp.json, or .cursor/mcp.json in a project):\n${JSON.stringify({ mcpServers: { envkeep: { url } } }, null, 2)}\n`,
    vscode: `VS Code (.vscode/mcp.json):\n${JSON.stringify({ servers: { envkeep: { type: 'http', url } } }, null, 2)}\n`,
  }
}

export const mcp: Command = {
  name: 'mcp',
  summary: "print the server's MCP endpoint and how to connect Claude Code, Cursor or VS Code",
  help: `Usage: envkeep mcp [--client claude|cursor|vscode] [--base-url URL]

Prints the MCP endpoint of the envkeep server ({base_url}/mcp) and a ready snippet
for Claude Code, Cursor and VS Code. Through it an AI assistant sees vault,
environment and variable names, who changed what and when; never a value. It may
propose changes, which wait for a person to review them. The assistant signs in
itself (your browser opens a consent page); this command sends nothing.

Options:
  --client NAME    print only the snippet of claude, cursor or vscode
${BASE_URL_HELP}
  -h, --help       show this help`,
  options: { client: { type: 'string' } },
  positionals: [0, 0],
  async run(ctx, { values }) {
    const which = values.client as string | undefined
    if (which !== undefined && !(CLIENTS as readonly string[]).includes(which)) {
      throw new CliError(`--client must be one of ${CLIENTS.join(', ')}`)
    }
    const baseUrl = await ctx.resolveBaseUrl(values['base-url'] as string | undefined)
    const url = `${baseUrl}/mcp`
    const snippets = mcpSnippets(url)
    if (which !== undefined) {
      ctx.out(snippets[which as McpClient])
      return 0
    }
    ctx.out(`MCP endpoint: ${url}\n\n${snippets.claude}\n${snippets.cursor}\n${snippets.vscode}`)
    ctx.err('The assistant sees names, never values; what it proposes waits for a person to review it.\n')
    return 0
  },
}

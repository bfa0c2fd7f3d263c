import t from 'tap'
import { EXIT } from '../src/exit-codes.js'
import { runCli, tempConfig } from './helpers/run-cli.js'

t.test('envkeep mcp prints the endpoint and a ready snippet for Claude Code, Cursor and VS Code, sending nothing', async (t) => {
  const dir = await tempConfig(t)
  let requests = 0
  const fetch = (async () => {
    requests++
    throw new Error('no request expected')
  }) as typeof globalThis.fetch
  const env = { ENVKEEP_CONFIG_DIR: dir, ENVKEEP_BASE_URL: 'https://envkeep.example.com/team' }
  const all = await runCli(['mcp'], { env, fetch })
  t.equal(all.code, EXIT.ok)
  t.match(all.stdout, /^MCP endpoint: https:\/\/envkeep\.example\.com\/team\/mcp\n/)
  t.match(all.stdout, 'claude mcp add --transport http envkeep https://envkeep.example.com/team/mcp')
  t.match(all.stdout, '"mcpServers": {')
  t.match(all.stdout, '"type": "http"')
  t.match(all.stderr, /names, never values/)
  const vscode = await runCli(['mcp', '--client', 'vscode'], { env, fetch })
  t.same(JSON.parse(vscode.stdout.slice(vscode.stdout.indexOf('{'))), { servers: { envkeep: { type: 'http', url: 'https://envkeep.example.com/team/mcp' } } })
  const cursor = await runCli(['mcp', '--client', 'cursor', '--base-url', 'https://other.example'], { env, fetch })
  t.same(JSON.parse(cursor.stdout.slice(cursor.stdout.indexOf('{'))), { mcpServers: { envkeep: { url: 'https://other.example/mcp' } } })
  t.equal((await runCli(['mcp', '--client', 'emacs'], { env, fetch })).code, EXIT.failure)
  const none = await runCli(['mcp'], { env: { ENVKEEP_CONFIG_DIR: dir }, fetch })
  t.not(none.code, EXIT.ok, 'no server known: says to sign in first')
  t.equal(requests, 0, 'nothing was sent')
})

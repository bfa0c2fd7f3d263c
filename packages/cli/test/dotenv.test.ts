import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import * as shared from '@envkeep/dotenv'
import * as cli from '../src/index.js'
import { runCli, tempConfig } from './helpers/run-cli.js'

// The grammar lives in @envkeep/dotenv (its own tests there); the CLI uses that package,
// not a copy of it, so `envkeep push` and the web page's "Paste a .env" read a file alike.

t.test("the CLI's parseDotenv is the shared package's", async (t) => {
  t.equal(cli.parseDotenv, shared.parseDotenv)
})

t.test('push --dry-run sends and refuses exactly what the shared parser says', async (t) => {
  const dir = await tempConfig(t)
  const text = 'A=1\r\nbad-name=2\r\nB="multi\r\nline"\r\nEMPTY=\r\ngarbage\r\nA=3\r\n'
  await writeFile(join(dir, '.env'), text)
  const r = await runCli(['push', 'app', 'development', '--dry-run', '--json', '--base-url', 'http://127.0.0.1:9'], {
    env: { ENVKEEP_CONFIG_DIR: dir },
    cwd: dir,
  })
  t.equal(r.code, 0, r.stderr)
  const parsed = shared.parseDotenv(text)
  const out = JSON.parse(r.stdout) as { names: string[]; refused: shared.RefusedLine[] }
  t.same(out.names, Object.keys(parsed.variables))
  t.same(out.names, ['B', 'A'])
  t.same(out.refused, parsed.refused)
  t.same(
    out.refused.map((x) => x.line),
    [1, 2, 5, 6],
  )
})

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { buildCli, type CliDeps } from '../../src/cli.js'

export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

function collect(stream: PassThrough): () => string {
  const chunks: Buffer[] = []
  stream.on('data', (c: Buffer) => chunks.push(c))
  return () => Buffer.concat(chunks).toString('utf8')
}

/** Runs the CLI in-process with fake streams and a private config dir. */
export async function runCli(args: string[], deps: Partial<CliDeps> = {}): Promise<CliResult> {
  const stdout = new PassThrough()
  const stderr = (deps.stderr as PassThrough | undefined) ?? new PassThrough()
  const out = collect(stdout)
  const err = collect(stderr)
  const cli = buildCli({
    stdin: new PassThrough(),
    stdout,
    isTTY: false,
    sleep: async () => {},
    openBrowser: async () => {},
    pollIntervalMs: 0,
    loginTimeoutMs: 10_000,
    timeoutMs: 10_000,
    ...deps,
    stderr,
  })
  const code = await cli.run(args)
  return { code, stdout: out(), stderr: err() }
}

export async function tempConfig(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'envkeep-cli-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** A browser that follows the consent link and the redirect back to the CLI's listener. */
export function autoBrowser(): (url: string) => Promise<void> {
  return async (url) => {
    const res = await fetch(url, { redirect: 'manual' })
    const location = res.headers.get('location')
    if (!location) throw new Error(`no redirect from authorize (${res.status})`)
    await fetch(location)
  }
}

import { spawn, type ChildProcess } from 'node:child_process'
import { createServer as createHttpServer } from 'node:http'
import { createServer } from 'node:net'
import { Writable } from 'node:stream'

/**
 * How every browser test here starts Debian's Chromium (with playwright-core's
 * `chromium.launch`): headless, as root, and with none of the background
 * traffic this machine's closed network would refuse.
 */
export const CHROMIUM_LAUNCH = Object.freeze({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
})

/** A port that was free on 127.0.0.1 a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

/** A writable stream that keeps everything written to it, as text (fake stdout/stderr, log sinks). */
export class Capture extends Writable {
  text = ''
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.text += typeof chunk === 'string' ? chunk : chunk.toString('utf8')
    cb()
  }
}

export interface SpawnedResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

export interface Spawned {
  readonly child: ChildProcess
  stdout(): string
  stderr(): string
  /** settles when the process has exited and its output is closed */
  readonly done: Promise<SpawnedResult>
  /** resolves once `re` matches what the stream printed so far; rejects if the process ends first */
  waitFor(stream: 'stdout' | 'stderr', re: RegExp): Promise<RegExpExecArray>
}

/**
 * Runs a Node script (a built binary) as a person or a script would, with
 * only PATH and `env` in its environment, collecting its output.
 */
export function spawnNode(script: string, args: readonly string[], o: { env: Record<string, string>; cwd?: string }): Spawned {
  const child = spawn(process.execPath, [script, ...args], {
    env: { PATH: process.env.PATH ?? '', ...o.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(o.cwd ? { cwd: o.cwd } : {}),
  })
  const out = { stdout: '', stderr: '' }
  const waiters: { stream: 'stdout' | 'stderr'; re: RegExp; resolve: (m: RegExpExecArray) => void }[] = []
  const check = (): void => {
    for (const w of [...waiters]) {
      const m = w.re.exec(out[w.stream])
      if (m) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve(m)
      }
    }
  }
  child.stdout?.on('data', (d: Buffer) => {
    out.stdout += d.toString('utf8')
    check()
  })
  child.stderr?.on('data', (d: Buffer) => {
    out.stderr += d.toString('utf8')
    check()
  })
  const done = new Promise<SpawnedResult>((resolve) => child.once('close', (code, signal) => resolve({ code, signal, stdout: out.stdout, stderr: out.stderr })))
  return {
    child,
    stdout: () => out.stdout,
    stderr: () => out.stderr,
    done,
    waitFor(stream, re) {
      return new Promise((resolve, reject) => {
        waiters.push({ stream, re, resolve })
        check()
        void done.then((r) => reject(new Error(`exited (${r.code ?? r.signal}) before printing ${re}: ${r.stderr}`)))
      })
    },
  }
}

/**
 * A loopback listener like the CLI's, for the OAuth redirect: resolves
 * `callback` with the first /callback URL it receives.
 */
export async function loopbackCallback(host: '127.0.0.1' | '::1' = '127.0.0.1'): Promise<{
  redirectUri: string
  callback: Promise<URL>
  close(): void
}> {
  let resolve!: (u: URL) => void
  const callback = new Promise<URL>((r) => (resolve = r))
  const server = createHttpServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('Signed in; you can close this window.')
    if (req.url?.startsWith('/callback')) resolve(new URL(req.url, 'http://loopback'))
  })
  await new Promise<void>((r) => server.listen(0, host, () => r()))
  const port = (server.address() as { port: number }).port
  return { redirectUri: `http://${host === '::1' ? '[::1]' : host}:${port}/callback`, callback, close: () => server.close() }
}
export { startOidcIssuer, type TestOidcIssuer, type OidcIssuerKey } from './oidc-issuer.js'
export { axeViolations, describeViolations, type AxePage, type AxeViolation } from './axe.js'
export { withTestDatabase, testDatabaseServerUrl, NO_TEST_DATABASE_REASON, type TestLike } from './postgres.js'
export { untilSeen } from './until-seen.js'

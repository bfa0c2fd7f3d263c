import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { buildCli as buildServerCli } from '@envkeep/server'
import { Capture, freePort, spawnNode, type Spawned } from '@envkeep/test-support'

export const CLI_BIN = fileURLToPath(new URL('../../dist/bin.js', import.meta.url))

export interface RealServer {
  readonly baseUrl: string
  readonly dataDir: string
  /** The server's clock: move it with `clock.ms += …`. */
  readonly clock: { ms: number }
  /** Runs `envkeep-server <args>` in-process against the data directory; stdin gets `input`. */
  admin(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }>
  /** The server's log so far. */
  log(): string
  stop(): Promise<void>
}

/**
 * The real self-hosting server (`envkeep-server start`, in this process, so
 * its clock can be moved) on 127.0.0.1 with a fresh data directory.
 */
export async function startRealServer(t: { teardown(fn: () => unknown): void }, extraEnv: Record<string, string> = {}): Promise<RealServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'envkeep-cli-it-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const port = await freePort()
  const clock = { ms: Date.now() }
  const env = { ENVKEEP_DATA_DIR: join(dataDir, 'data'), ENVKEEP_PORT: String(port), ENVKEEP_LOG_LEVEL: 'info', ...extraEnv }
  const now = () => new Date(clock.ms)

  async function admin(args: string[], input = '') {
    const stdin = new PassThrough()
    stdin.end(input)
    const stdout = new Capture()
    const stderr = new Capture()
    const code = await buildServerCli({ stdin, stdout, stderr, env, cwd: dataDir, now }).run(args)
    return { code, stdout: stdout.text, stderr: stderr.text }
  }
  const init = await admin(['init'])
  if (init.code !== 0) throw new Error(`init failed: ${init.stderr}`)

  const out = new Capture()
  let shutdown: ((signal: string) => void) | null = null
  const running = buildServerCli({
    stdin: new PassThrough(),
    stdout: out,
    stderr: new Capture(),
    env,
    cwd: dataDir,
    now,
    onShutdownSignal: (h) => {
      shutdown = h
      return () => {}
    },
  }).run(['start'])
  for (let i = 0; i < 500 && !out.text.includes('envkeep-server started'); i++) {
    await new Promise((r) => setTimeout(r, 20))
  }
  if (!out.text.includes('envkeep-server started')) throw new Error(`server did not start: ${out.text}`)
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    ;(shutdown as ((s: string) => void) | null)?.('SIGTERM')
    await running
  }
  t.teardown(stop)
  return { baseUrl: `http://127.0.0.1:${port}`, dataDir, clock, admin, log: () => out.text, stop }
}

/** Runs the built `envkeep` binary as a person or a script would. */
export function runBin(args: string[], env: Record<string, string>, cwd?: string): Spawned {
  return spawnNode(CLI_BIN, args, { env, ...(cwd ? { cwd } : {}) })
}

const unescapeHtml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&#x27;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')

export interface Form {
  action: string
  fields: Record<string, string>
}

/** The post forms of a page, with their hidden fields. */
export function formsOf(page: string): Form[] {
  const forms: Form[] = []
  for (const m of page.matchAll(/<form method="post" action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)) {
    const fields: Record<string, string> = {}
    for (const i of m[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[unescapeHtml(i[1]!)] = unescapeHtml(i[2]!)
    forms.push({ action: unescapeHtml(m[1]!), fields })
  }
  return forms
}

/** A person with a browser: a cookie jar over fetch, no redirects followed. */
export function createPerson(baseUrl: string, email: string, password: string) {
  const jar: Record<string, string> = {}
  const cookie = () =>
    Object.entries(jar)
      .map(([k, v]) => `${k}=${v}`)
      .join('; ')
  const keep = (res: Response) => {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';')
      const i = pair!.indexOf('=')
      jar[pair!.slice(0, i)] = pair!.slice(i + 1)
    }
  }
  const abs = (u: string) => new URL(u, baseUrl).href
  async function get(url: string) {
    const res = await fetch(abs(url), { headers: { cookie: cookie() }, redirect: 'manual' })
    keep(res)
    return { res, body: await res.text() }
  }
  async function post(url: string, form: Record<string, string>) {
    const res = await fetch(abs(url), {
      method: 'POST',
      headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
      redirect: 'manual',
    })
    keep(res)
    return { res, body: await res.text() }
  }
  return {
    get,
    post,
    /**
     * Opens the link the CLI printed, signs in on the way if needed, and
     * answers the consent page. Returns the loopback callback URL's answer.
     */
    async consent(link: string, o: { push: boolean; decision?: 'allow' | 'deny' }): Promise<{ status: number; callback: string }> {
      let page = await get(link)
      if (page.res.status === 302 || page.res.status === 303) {
        const login = await get(page.res.headers.get('location')!)
        const form = formsOf(login.body).find((f) => f.action.endsWith('/login'))!
        const signedIn = await post(form.action, { ...form.fields, email, password })
        if (signedIn.res.status !== 303) throw new Error(`person sign-in failed: ${signedIn.res.status}`)
        page = await get(signedIn.res.headers.get('location')!)
      }
      if (page.res.status !== 200) throw new Error(`consent page: ${page.res.status}`)
      const form = formsOf(page.body)[0]!
      const answer = await post(form.action, {
        ...form.fields,
        decision: o.decision ?? 'allow',
        ...(o.push ? { allow_push: 'yes' } : {}),
      })
      const callback = answer.res.headers.get('location') ?? ''
      if (!callback.startsWith('http://127.0.0.1:') && !callback.startsWith('http://[::1]:')) {
        throw new Error(`consent answer did not redirect to the loopback listener: ${answer.res.status}`)
      }
      const res = await fetch(callback)
      await res.text()
      return { status: res.status, callback }
    },
    /** Presses a button (apply/reject) on a push's review page. */
    async decide(reviewUrl: string, decision: 'apply' | 'reject') {
      const page = await get(reviewUrl)
      const form = formsOf(page.body).find((f) => f.action.endsWith(`/${decision}`))
      if (!form) throw new Error(`no ${decision} form on the review page (${page.res.status})`)
      return post(form.action, form.fields)
    },
  }
}

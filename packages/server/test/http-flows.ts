import { spawn, type ChildProcess } from 'node:child_process'

/** Browser-side steps over plain HTTP, for tests that drive a real server from outside. */

export function unescapeHtml(s: string): string {
  return s.replace(/&(amp|lt|gt|quot|#39|#x27);/g, (_m, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#x27': "'" })[e]!)
}

/** The hidden fields of a page's forms (the last one of a name wins). */
export function hiddenFields(html: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) out[unescapeHtml(m[1]!)] = unescapeHtml(m[2]!)
  return out
}

/** A browser's cookies and its form posts (with the Origin a browser sends). */
export function httpBrowser(base: string) {
  const cookies = new Map<string, string>()
  const header = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  const take = (res: Response) => {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';')
      const i = pair!.indexOf('=')
      cookies.set(pair!.slice(0, i), pair!.slice(i + 1))
    }
    return res
  }
  return {
    async get(url: string): Promise<{ status: number; html: string }> {
      const res = take(await fetch(url, { headers: { cookie: header() }, redirect: 'manual' }))
      return { status: res.status, html: await res.text() }
    },
    async post(url: string, fields: Record<string, string>): Promise<Response> {
      return take(
        await fetch(url, {
          method: 'POST',
          redirect: 'manual',
          headers: { cookie: header(), 'content-type': 'application/x-www-form-urlencoded', origin: new URL(base).origin },
          body: new URLSearchParams(fields).toString(),
        }),
      )
    },
  }
}

export type HttpBrowser = ReturnType<typeof httpBrowser>

/** Creates the first account through the setup link; the browser is then signed in. Returns the POST's status. */
export async function setUpFirstAccount(
  b: HttpBrowser,
  base: string,
  setupLink: string,
  who: { email: string; name: string; password: string },
): Promise<number> {
  const page = await b.get(setupLink)
  const res = await b.post(`${base}/setup`, { ...hiddenFields(page.html), ...who, password2: who.password })
  return res.status
}

/** Starts a program and resolves with the first match of `re` on its stderr (rejects if it exits first). */
export function spawnUntil(cmd: string, args: readonly string[], o: { env: Record<string, string>; cwd: string }, re: RegExp) {
  const child: ChildProcess = spawn(cmd, args, { env: o.env, cwd: o.cwd, stdio: ['ignore', 'pipe', 'pipe'] })
  const out = { stdout: '', stderr: '' }
  child.stdout!.on('data', (d: Buffer) => (out.stdout += d.toString()))
  const match = new Promise<RegExpExecArray>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      out.stderr += d.toString()
      const m = re.exec(out.stderr)
      if (m) resolve(m)
    })
    child.once('exit', (code) => reject(new Error(`${cmd} exited ${code} before printing ${re}: ${out.stderr}`)))
  })
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])))
  return { child, out, match, exited }
}

/**
 * `envkeep login --no-browser --push` answered by a signed-in browser: the link the CLI prints
 * is opened, Allow is pressed (push ticked), and the redirect goes to the CLI's listener.
 * Resolves with the CLI's exit code and stderr.
 */
export async function cliLoginByConsent(
  cli: { cmd: string; args: readonly string[] },
  o: { env: Record<string, string>; cwd: string },
  b: HttpBrowser,
  base: string,
) {
  const login = spawnUntil(cli.cmd, [...cli.args, 'login', '--no-browser', '--push', '--base-url', base], o, /(https?:\/\/\S+\/oauth\/authorize\?\S+)/)
  const link = (await login.match)[1]!
  const consent = await b.get(link)
  const allow = await b.post(`${base}/oauth/authorize`, { ...hiddenFields(consent.html), allow_push: 'yes', decision: 'allow' })
  if (allow.status !== 303) throw new Error(`consent answered ${allow.status}`)
  await fetch(allow.headers.get('location')!, { redirect: 'manual' })
  const [code] = await login.exited
  return { code, stderr: login.out.stderr }
}

import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'

/**
 * Settings that hold a secret: each is also read from a file named by `<NAME>_FILE` (Docker and
 * systemd credentials, Kubernetes secrets), and never printed. ENVKEEP_MASTER_KEY_FILE is the
 * key file the keyring reads itself (and rotation rewrites), so it is not resolved here.
 * Add a new secret setting here (and to SETTINGS) and its _FILE form works.
 */
export const SECRET_SETTINGS: readonly string[] = Object.freeze([
  'ENVKEEP_MASTER_KEY',
  'ENVKEEP_DATABASE_URL',
  'ENVKEEP_SMTP_URL',
  'ENVKEEP_OIDC_CLIENT_SECRET',
  'ENVKEEP_AUDIT_STREAM_SECRET',
])

/**
 * Names the server does not read but that are not mistakes: the CLI's own settings (one
 * machine may run both), the test suite's, and the release build's.
 */
const OTHER_PROGRAMS: readonly (string | RegExp)[] = Object.freeze([
  'ENVKEEP_CONFIG_DIR',
  'ENVKEEP_ALLOW_HTTP',
  'ENVKEEP_OIDC_TOKEN',
  'ENVKEEP_OIDC_AUDIENCE',
  'ENVKEEP_MASK',
  'ENVKEEP_FALLBACK_KEYRING',
  /^ENVKEEP_TEST_/,
  /^ENVKEEP_[A-Z]+__$/,
])

type Env = Readonly<Record<string, string | undefined>>

/** Whether `name` is a `_FILE` form the server resolves (every secret but the master key, which the keyring reads). */
function fileFormOf(name: string): string | null {
  if (!name.endsWith('_FILE')) return null
  const base = name.slice(0, -'_FILE'.length)
  return SECRET_SETTINGS.includes(base) && base !== 'ENVKEEP_MASTER_KEY' ? base : null
}

/**
 * The environment with every `<SECRET>_FILE` replaced by `<SECRET>` holding the file's content
 * (one trailing newline removed). Both set, or a file that cannot be read: an error naming the
 * setting and the path, never the content.
 */
export function resolveFileSettings(env: Env, cwd: string, onError: (message: string) => Error): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = { ...env }
  for (const [name, path] of Object.entries(env)) {
    const base = fileFormOf(name)
    if (base === null || path === undefined || path === '') continue
    if (env[base] !== undefined && env[base] !== '') throw onError(`set ${base} or ${name}, not both`)
    let text: string
    try {
      text = readFileSync(resolve(cwd, path), 'utf8')
    } catch (err) {
      throw onError(`${name}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
    }
    text = text.replace(/\r?\n$/, '')
    if (text === '') throw onError(`${name}: ${path} is empty`)
    out[base] = text
    delete out[name]
  }
  return out
}

/** Levenshtein distance, small strings only. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1))
      prev = cur
    }
  }
  return row[b.length]!
}

/**
 * `ENVKEEP_*` names in the environment that the server does not know, each with the closest
 * known name when one is near (a typo), e.g. `ENVKEEP_DATABSE_URL: did you mean ENVKEEP_DATABASE_URL?`.
 */
export function unknownSettings(env: Env, known: readonly string[]): string[] {
  const all = new Set<string>(known)
  for (const s of SECRET_SETTINGS) all.add(`${s}_FILE`)
  const out: string[] = []
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('ENVKEEP_') || all.has(name)) continue
    if (OTHER_PROGRAMS.some((p) => (typeof p === 'string' ? p === name : p.test(name)))) continue
    let best: { name: string; d: number } | null = null
    for (const k of all) {
      const d = distance(name, k)
      if (!best || d < best.d) best = { name: k, d }
    }
    const near = best && best.d <= Math.max(2, Math.floor(name.length / 6))
    out.push(near ? `${name} is not a setting of envkeep-server; did you mean ${best!.name}?` : `${name} is not a setting of envkeep-server`)
  }
  return out
}

/** A URL with its password (and query, which may hold one) hidden: the rest helps an operator. */
function redactUrl(raw: string): string {
  try {
    const u = new URL(raw)
    if (u.password) u.password = 'redacted'
    if (u.search) u.search = '?redacted'
    return u.toString()
  } catch {
    return '[redacted]'
  }
}

/**
 * The settings in effect, for the start-up log: every known name set in the environment, with
 * secrets redacted (URLs keep their host; a key or secret shows only that it is set) and where
 * a secret came from a file, the file's path.
 */
export function effectiveSettings(rawEnv: Env, resolved: Env, known: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of known) {
    const v = resolved[name]
    if (v === undefined || v === '') continue
    const fromFile = rawEnv[`${name}_FILE`] !== undefined && rawEnv[name] === undefined ? ` (from ${rawEnv[`${name}_FILE`]})` : ''
    if (SECRET_SETTINGS.includes(name)) out[name] = `${name.endsWith('_URL') ? redactUrl(v) : '[redacted]'}${fromFile}`
    else out[name] = v.length > 200 ? `${v.slice(0, 200)}…` : v
  }
  return out
}

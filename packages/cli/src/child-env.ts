import { isCodeVariable } from '@envkeep/dotenv'

/**
 * Settings of the person's own environment a command started by `run` is not given: the CI
 * identity token is used once by envkeep and is nobody else's to use. (GitHub Actions' own
 * ACTIONS_ID_TOKEN_REQUEST_* reach every step of a job whatever envkeep does; see the README.)
 */
const NOT_INHERITED = ['ENVKEEP_OIDC_TOKEN']

/** The names given with `--allow` (repeated, or N1,N2). */
export function allowedNames(raw: unknown): string[] {
  const list = Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : []
  return list
    .flatMap((s) => String(s).split(','))
    .map((n) => n.trim())
    .filter((n) => n !== '')
}

/**
 * The variables less those that make programs run code and are not allowed by name (those are
 * returned in `heldBack`, names only, sorted): what `run` gives a command and what
 * `pull --format shell` writes for a shell to evaluate.
 */
export function withoutCodeVariables(
  variables: Readonly<Record<string, string>>,
  allowed: readonly string[],
): { given: Record<string, string>; heldBack: string[] } {
  const allow = new Set(allowed)
  const given: Record<string, string> = {}
  const heldBack: string[] = []
  for (const [k, v] of Object.entries(variables)) {
    if (isCodeVariable(k) && !allow.has(k)) heldBack.push(k)
    else given[k] = v
  }
  return { given, heldBack: heldBack.sort() }
}

/** The note naming what was held back (names only), and how to allow one. */
export function heldBackNote(heldBack: readonly string[]): string {
  return `held back ${heldBack.join(', ')}: ${heldBack.length === 1 ? 'it makes' : 'they make'} programs run code; allow by name with --allow ${heldBack[0]}`
}

/**
 * The environment of `run`'s command: the person's own, less what must not be inherited, plus
 * the vault's variables, except those that make programs run code and are not allowed by name
 * (returned in `heldBack`, names only, sorted).
 */
export function childEnvironment(
  own: Readonly<Record<string, string | undefined>>,
  variables: Readonly<Record<string, string>>,
  o: { readonly override: boolean; readonly allow: readonly string[] },
): { env: Record<string, string>; heldBack: string[] } {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(own)) if (v !== undefined && !NOT_INHERITED.includes(k)) env[k] = v
  const { given, heldBack } = withoutCodeVariables(variables, o.allow)
  for (const [k, v] of Object.entries(given)) if (o.override || env[k] === undefined) env[k] = v
  return { env, heldBack }
}

import escapeHtml from 'escape-html'

/**
 * Auto-escaping HTML templates: every `${…}` interpolated into `html`...``
 * is escaped unless it is itself a `SafeHtml` (made by `html` or by
 * `rawTrusted` for constant markup). Arrays are joined, null/undefined/false
 * render as nothing.
 */
export class SafeHtml {
  readonly value: string
  constructor(value: string) {
    this.value = value
  }
  toString(): string {
    return this.value
  }
}

export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[]

function render(v: HtmlValue): string {
  if (v === null || v === undefined || v === false) return ''
  if (v instanceof SafeHtml) return v.value
  if (Array.isArray(v)) return v.map((x) => render(x)).join('')
  return escapeHtml(String(v))
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? ''
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '')
  return new SafeHtml(out)
}

/** Constant markup written in our own source only; never pass anything that came from a request or storage. */
export function rawTrusted(markup: string): SafeHtml {
  return new SafeHtml(markup)
}

/** Headers for every page: strict CSP with no inline script, no framing, no caching of personal pages. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy':
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store, private',
})

import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

/** The part of a playwright Page the check uses (keeps playwright out of this package's types). */
export interface AxePage {
  evaluate<R>(expression: string): Promise<R>
}

export interface AxeViolation {
  readonly id: string
  readonly impact: 'minor' | 'moderate' | 'serious' | 'critical' | null
  readonly help: string
  /** CSS targets of the failing nodes */
  readonly targets: readonly string[]
}

let source: string | null = null

/**
 * Runs axe-core in the page and returns its violations of `impact` at
 * least serious (all of them with `{ all: true }`). The source goes in
 * through `page.evaluate`, which the page's CSP (script-src 'self', no
 * inline) does not apply to; `addScriptTag({ content })` would be refused.
 */
export async function axeViolations(page: AxePage, o: { all?: boolean } = {}): Promise<AxeViolation[]> {
  source ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
  await page.evaluate(`${source}\n;void 0`)
  const found = await page.evaluate<AxeViolation[]>(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({
    id: v.id, impact: v.impact ?? null, help: v.help, targets: v.nodes.map((n) => String(n.target.join(' '))),
  })))`)
  return o.all ? found : found.filter((v) => v.impact === 'serious' || v.impact === 'critical')
}

/** One line per violation, for a test message. */
export function describeViolations(vs: readonly AxeViolation[]): string {
  return vs.map((v) => `${v.impact ?? '?'} ${v.id}: ${v.help} at ${v.targets.slice(0, 3).join(', ')}`).join('\n')
}

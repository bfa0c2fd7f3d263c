import type { EnvironmentInfo, VaultAccess } from '../adapters/vault-store.js'
import type { PersonActor } from '../domain/actor.js'
import { mayAccess } from '../domain/permissions.js'
import { personCache, personLabel, type PageDeps } from './context.js'
import { html, type SafeHtml } from './html.js'

/**
 * Personal overrides on the Variables page (issue 24): a mark on the names
 * the person overrides, "Override for me" where the environment allows it,
 * and, for owners, who overrides which name (never a value).
 */
export interface OverridesShown {
  readonly allowed: boolean
  readonly mine: ReadonlySet<string>
  /** for owners: name → the people who override it */
  readonly byName: ReadonlyMap<string, readonly SafeHtml[]>
}

export async function overridesShown(deps: PageDeps, actor: PersonActor, vault: VaultAccess, env: EnvironmentInfo): Promise<OverridesShown> {
  const view = await deps.domain.describeOverrides(actor, { vaultId: vault.id, environment: env.name })
  const people = personCache(deps)
  const byName = new Map<string, SafeHtml[]>()
  for (const [name, ids] of view.byName) byName.set(name, await Promise.all(ids.map(async (id) => personLabel(await people(id), id))))
  return { allowed: view.allowed && mayAccess(vault, env, 'read'), mine: new Set(view.mine), byName }
}

/** The marks under a variable's name: overridden for the person; for owners, by whom. */
export function overrideMarks(shown: OverridesShown, name: string): SafeHtml | string {
  const mine = shown.mine.has(name) ? html`<span class="badge overridden" data-overridden="${name}">overridden for you</span>` : ''
  const who = shown.byName.get(name)
  const list =
    who && who.length > 0
      ? html`<span class="small muted overrides-of" data-overrides="${name}">personal overrides: ${who.map((w, i) => html`${i > 0 ? ', ' : ''}${w}`)}</span>`
      : ''
  return mine === '' && list === '' ? '' : html`<div class="var-overrides">${mine} ${list}</div>`
}

/** "Override for me" (and "Stop overriding") for one variable, where the environment allows it. */
export function overrideForms(shown: OverridesShown, base: string, csrf: SafeHtml, env: EnvironmentInfo, name: string): SafeHtml | string {
  if (!shown.allowed) return ''
  const anchor = `env-${env.name}`
  const id = `override-${env.name}-${name}`
  return html`<details><summary>Override for me</summary>
<form method="post" action="${`${base}/variables/override#${anchor}`}">
${csrf}<input type="hidden" name="environment" value="${env.name}"><input type="hidden" name="name" value="${name}">
<label for="${id}">Your own value (used for your reads only)</label>
<textarea id="${id}" name="value" rows="2" required spellcheck="false" autocomplete="off"></textarea>
<button type="submit">Save my override</button>
</form>
</details>${
    shown.mine.has(name)
      ? html`<form method="post" action="${`${base}/variables/override/remove#${anchor}`}" class="inline">
${csrf}<input type="hidden" name="environment" value="${env.name}"><input type="hidden" name="name" value="${name}">
<button type="submit" class="secondary">Stop overriding</button>
</form>`
      : ''
  }`
}

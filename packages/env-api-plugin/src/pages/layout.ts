import { html, type SafeHtml } from './html.js'

export interface LayoutInput {
  readonly title: string
  readonly body: SafeHtml
  /** name of the signed-in person, shown in the header */
  readonly personName?: string | null
  /** path prefix of the service ('' at the root), for links and assets */
  readonly basePath?: string
  /** where the "Sign out" link goes (PeopleAdapter.signOutUrl); no link when absent */
  readonly signOutHref?: string | null
  /** where the person's own account page is (PeopleAdapter.accountUrl): their name links there */
  readonly accountHref?: string | null
  /** pending pushes waiting for the person, shown with a link to the vault list when there are some */
  readonly waiting?: { readonly total: number; readonly more: boolean } | null
}

/** "1 push waiting", "3 pushes waiting", "50+ pushes waiting". */
export function pushesWaitingText(n: number, more = false): string {
  return `${n}${more ? '+' : ''} ${n === 1 && !more ? 'push' : 'pushes'} waiting`
}

/**
 * The page frame shared by every page (the plugin's and the server's):
 * no inline script or style, so the strict CSP holds. The pages work owns
 * its look; keep this signature.
 */
export function layout(input: LayoutInput): string {
  const base = input.basePath ?? ''
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${input.title} · envkeep</title>
<link rel="icon" href="${base}/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${base}/assets/envkeep.css">
<script src="${base}/assets/envkeep.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><a href="${base}/" class="brand"><img src="${base}/assets/favicon.svg" alt="">envkeep</a>${
    input.personName
      ? html`<nav aria-label="Main"><a href="${base}/">Vaults</a><a href="${base}/sign-ins">Sign-ins</a></nav>${
          input.waiting && input.waiting.total > 0
            ? html`<a class="waiting" href="${base}/">${pushesWaitingText(input.waiting.total, input.waiting.more)}</a>`
            : ''
        }${input.accountHref ? html`<a class="who" href="${input.accountHref}" title="Your account">${input.personName}</a>` : html`<span class="who">${input.personName}</span>`}${input.signOutHref ? html`<a class="sign-out" href="${input.signOutHref}">Sign out</a>` : ''}`
      : ''
  }</header>
<main id="main" tabindex="-1">
${input.body}
</main>
</body>
</html>`.value
}

import { field, html, type SafeHtml } from '@envkeep/env-api-plugin'
import { MAX_PASSWORD, MIN_PASSWORD, passwordProblem } from '../secrets.js'

/** The rules of a new password in words, as the forms state them next to the field. */
export const PASSWORD_RULES = `At least ${MIN_PASSWORD} characters (at most ${MAX_PASSWORD}); any characters, spaces included. A phrase of a few words is easy to type and hard to guess.`

export const PASSWORDS_DIFFER = 'the two passwords are not the same; type the same password in both fields'

/**
 * "Password" with its rules, then "Password again" (setup and invitation
 * pages). Never pre-filled: a refused form asks for both again.
 */
export function newPasswordFields(): SafeHtml {
  return html`<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD}" maxlength="${MAX_PASSWORD}" required aria-describedby="password-rules">
<p class="hint" id="password-rules">${PASSWORD_RULES}</p>
<label for="password2">Password again</label>
<input id="password2" name="password2" type="password" autocomplete="new-password" minlength="${MIN_PASSWORD}" maxlength="${MAX_PASSWORD}" required>`
}

/** Why the two password fields of a form are refused, or null. Never repeats either. */
export function newPasswordProblem(body: unknown): string | null {
  const password = field(body, 'password')
  return passwordProblem(password) ?? (password === field(body, 'password2') ? null : PASSWORDS_DIFFER)
}

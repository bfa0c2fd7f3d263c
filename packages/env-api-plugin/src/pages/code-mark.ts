import { codeVariableReason } from '@envkeep/dotenv'
import { html, type SafeHtml } from './html.js'

/**
 * A mark beside a variable name that makes programs run code (NODE_OPTIONS, LD_PRELOAD, …: the
 * one list of @envkeep/dotenv that `envkeep run` also holds back), for the Variables page and
 * the push review page: whoever may change it may run code on the machines that use the vault.
 */
export function codeMark(name: string): SafeHtml | '' {
  const why = codeVariableReason(name)
  if (why === null) return ''
  return html` <span class="badge code-var" data-code-var="${name}" title="${`This variable makes programs run code (${why}). envkeep run gives it to a program only when the person allows it by name.`}">runs code</span>`
}

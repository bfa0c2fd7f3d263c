import { NAME_RE, readEntries } from '@envkeep/dotenv'
import { CliError } from './errors.js'

export const FORMATS = ['dotenv', 'json', 'shell'] as const
export type Format = (typeof FORMATS)[number]

export function isFormat(s: string): s is Format {
  return (FORMATS as readonly string[]).includes(s)
}

/** POSIX single quotes: everything literal; a `'` is closed, escaped and reopened. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`
}

/**
 * One `NAME=…` entry that dotenv reads back as exactly `value`, or null when
 * dotenv's grammar cannot carry it (e.g. a value with all three quote kinds
 * and a line break). Candidates are checked against the grammar itself
 * rather than trusted.
 */
export function dotenvEntry(name: string, value: string): string | null {
  const candidates = [`'${value}'`, `\`${value}\``, `"${value.replace(/\n/g, '\\n').replace(/\r/g, '\\r')}"`, `"${value}"`]
  for (const c of candidates) {
    const line = `${name}=${c}`
    const { entries, unparsed } = readEntries(`${line}\n`)
    const e = entries[0]
    if (unparsed.length === 0 && entries.length === 1 && e && e.name === name && e.value === value && !e.unclosedQuote) return line
  }
  return null
}

function formatDotenv(variables: Readonly<Record<string, string>>): string {
  const out: string[] = []
  const impossible: string[] = []
  for (const [name, value] of Object.entries(variables)) {
    const entry = dotenvEntry(name, value)
    if (entry === null) impossible.push(name)
    else out.push(entry)
  }
  if (impossible.length > 0) {
    throw new CliError(
      `the dotenv format cannot hold the value of ${impossible.join(', ')} so that dotenv reads it back exactly (it mixes all three quote characters with # or line breaks)`,
      { hint: 'use --format json or --format shell, which carry any value' },
    )
  }
  const text = out.length ? `${out.join('\n')}\n` : ''
  // The whole file must read back as the whole set: a last check, never a value in the message.
  const back = readEntries(text).entries
  const same = back.length === Object.keys(variables).length && back.every((e) => !e.unclosedQuote && variables[e.name] === e.value)
  if (!same) throw new CliError('could not write a dotenv file that reads back exactly', { hint: 'use --format json or --format shell' })
  return text
}

/** Renders variables in a format whose reader gets back exactly the stored strings. */
export function formatVariables(variables: Readonly<Record<string, string>>, format: Format): string {
  if (format !== 'json') {
    // A name goes into a file or a shell unquoted: only plain names, whatever the server sent.
    const odd = Object.keys(variables).filter((n) => !NAME_RE.test(n))
    if (odd.length > 0) throw new CliError(`the server sent ${odd.length} variable name(s) that are not plain names`, { hint: 'use --format json' })
  }
  switch (format) {
    case 'json':
      return `${JSON.stringify(variables, null, 2)}\n`
    case 'shell':
      return Object.entries(variables)
        .map(([name, value]) => `export ${name}=${shellQuote(value)}\n`)
        .join('')
    case 'dotenv':
      return formatDotenv(variables)
  }
}

import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import dotenv from 'dotenv'
import fc from 'fast-check'
import { CliError } from '../src/errors.js'
import { dotenvEntry, formatVariables, shellQuote } from '../src/formats.js'
import { NASTY } from './helpers/nasty.js'

function shellRead(text: string, names: string[]): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'envkeep-fmt-'))
  try {
    const file = join(dir, 'vars.sh')
    writeFileSync(file, text)
    const script = `. "$0" && printf '%s\\0' ${names.map((n) => `"$${n}"`).join(' ')}`
    const out = execFileSync('sh', ['-c', script, file], { env: { PATH: process.env.PATH }, maxBuffer: 64 << 20 })
    const values = out.toString('utf8').split('\0').slice(0, -1)
    return Object.fromEntries(names.map((n, i) => [n, values[i]!]))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

t.test('json: JSON.parse reads back every value', async (t) => {
  t.same(JSON.parse(formatVariables(NASTY, 'json')), NASTY)
})

t.test('shell: a real sh reads back every value', async (t) => {
  const back = shellRead(formatVariables(NASTY, 'shell'), Object.keys(NASTY))
  for (const [n, v] of Object.entries(NASTY)) t.equal(back[n], v, n)
})

t.test('shell: the output is export lines that run nothing', async (t) => {
  const text = formatVariables({ A: '$(touch /tmp/envkeep-pwned)`touch /tmp/envkeep-pwned`' }, 'shell')
  t.equal(text, `export A='$(touch /tmp/envkeep-pwned)\`touch /tmp/envkeep-pwned\`'\n`)
})

t.test('dotenv: the dotenv package reads back every value that the format can carry', async (t) => {
  const text = formatVariables(NASTY, 'dotenv')
  const back = dotenv.parse(text)
  t.same(Object.keys(back).sort(), Object.keys(NASTY).sort())
  for (const [n, v] of Object.entries(NASTY)) t.equal(back[n], v, n)
})

t.test('dotenv: a value dotenv cannot carry is an error naming the variable, not its value', async (t) => {
  const value = `'CANARY_7f3a' "q" \`b\` # hash\nand a line`
  t.equal(dotenvEntry('X', value), null)
  try {
    formatVariables({ OK: 'fine', IMPOSSIBLE: value }, 'dotenv')
    t.fail('should throw')
  } catch (err) {
    t.ok(err instanceof CliError)
    t.match((err as CliError).message, /IMPOSSIBLE/)
    t.notMatch(`${(err as CliError).message} ${(err as CliError).hint}`, /CANARY_7f3a|hash/)
    t.match((err as CliError).hint, /--format json/)
  }
})

t.test('names that are not plain names never reach a shell or dotenv file', async (t) => {
  for (const format of ['shell', 'dotenv'] as const) {
    t.throws(() => formatVariables({ 'A;touch x': 'v' }, format), CliError, format)
  }
  t.same(JSON.parse(formatVariables({ 'A;touch x': 'v' }, 'json')), { 'A;touch x': 'v' })
})

t.test('shellQuote', async (t) => {
  t.equal(shellQuote(''), "''")
  t.equal(shellQuote("a'b"), `'a'\\''b'`)
})

const valueArb = fc.string({
  unit: fc.oneof(fc.constantFrom('\n', '\r', '"', "'", '`', '\\', '$', '#', ' ', '=', 'n', 'r', 'é', '🙂', '\t'), fc.constantFrom('a', 'b', 'Z', '0')),
  maxLength: 20,
})

t.test('property: json and shell carry any value; dotenv carries it or refuses, never alters it', async (t) => {
  // tap's ErrorMatch wants a message, name, code, cause or errors key, so the
  // hint is matched on the thrown error in a second step (same check as before)
  const refused = t.throws(() => formatVariables({ V0: '\\', V1: '\n' }, 'dotenv'), 'a backslash-ended value before a later single-quoted line: refused')
  t.match(refused, { hint: /--format json/ }, 'refused with the --format json hint')
  const batches = fc.sample(fc.array(valueArb, { minLength: 1, maxLength: 30 }), 8)
  for (const values of batches) {
    const vars = Object.fromEntries(values.map((v, i) => [`V${i}`, v]))
    t.same(JSON.parse(formatVariables(vars, 'json')), vars)
    t.same(shellRead(formatVariables(vars, 'shell'), Object.keys(vars)), vars)
    const carried = Object.fromEntries(Object.entries(vars).filter(([n, v]) => dotenvEntry(n, v) !== null))
    // Each line alone reads back, but dotenv's quote matching can run from one line into a
    // later one (a value ending in a backslash before a later quote of the same kind): the
    // whole file is then refused with a hint, never written altered.
    let text: string | null = null
    try {
      text = formatVariables(carried, 'dotenv')
    } catch (err) {
      t.match(err, { message: 'could not write a dotenv file that reads back exactly', hint: /--format json/ })
    }
    if (text !== null) t.same(dotenv.parse(text), carried)
  }
  fc.assert(
    fc.property(valueArb, (v) => {
      const line = dotenvEntry('K', v)
      return line === null || dotenv.parse(line).K === v
    }),
    { numRuns: 2000 },
  )
})

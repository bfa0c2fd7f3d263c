import t from 'tap'
import dotenv from 'dotenv'
import fc from 'fast-check'
import { parseDotenv, readEntries } from '../src/index.js'

// A file full of edge cases. Line numbers matter: the expectations below name them.
const EDGE = [
  '# a comment', //                                   1
  '', //                                              2
  'PLAIN=hello world', //                             3
  'export EXPORTED=yes', //                           4
  "SINGLE='it has $dollar and \\backslash'", //       5
  'DOUBLE="line1\\nline2\\rend"', //                  6
  'BACK=`has "double" and \'single\'`', //            7
  'MULTI="first', //                                  8
  'second', //                                        9
  'third"', //                                        10
  'INLINE=value # a comment', //                      11
  'HASH_IN_QUOTES="a # b"', //                        12
  'SPACED   =   padded   ', //                        13
  'COLON: yaml style', //                             14
  'UNICODE=héllo wörld ✓ 日本', //                     15
  'ESCAPED_QUOTE="say \\"hi\\""', //                  16
  'EMPTY=', //                                        17
  'EMPTY_QUOTED=""', //                               18
  'bad-name=x', //                                    19
  '1DIGIT=x', //                                      20
  'ENVKEEP_TOKEN=mine', //                            21
  'DUP=first', //                                     22
  'this line is garbage', //                          23
  'DUP=second', //                                    24
  '  INDENTED=ok', //                                 25
  'UNCLOSED="no end', //                              26
  'export # nothing exported', //                     27
  'BIG=' + 'x'.repeat(65_537), //                     28
  'JUST_FITS=' + 'é'.repeat(32_768), //               29
  "SQ_MULTI='a", //                                   30
  "b'", //                                            31
  'CRLF=windows\r', //                                32
  'LAST=end', //                                      33
].join('\n')

t.test('the parser agrees with the dotenv package on every value it sends', async (t) => {
  const ours = parseDotenv(EDGE)
  const theirs = dotenv.parse(EDGE)
  t.ok(Object.keys(ours.variables).length >= 15, 'sends the good lines')
  for (const [name, value] of Object.entries(ours.variables)) {
    t.equal(value, theirs[name], `${name} reads the same as dotenv`)
  }
  // Whatever dotenv reads that we do not send is accounted for as a refused line of that name.
  for (const name of Object.keys(theirs)) {
    if (name in ours.variables) continue
    t.ok(
      ours.refused.some((r) => r.name === name),
      `${name} (not sent) is listed as refused`,
    )
  }
})

t.test('values of the edge-case file', async (t) => {
  const v = parseDotenv(EDGE).variables
  t.equal(v.PLAIN, 'hello world')
  t.equal(v.EXPORTED, 'yes')
  t.equal(v.SINGLE, 'it has $dollar and \\backslash')
  t.equal(v.DOUBLE, 'line1\nline2\rend')
  t.equal(v.BACK, `has "double" and 'single'`)
  t.equal(v.MULTI, 'first\nsecond\nthird')
  t.equal(v.INLINE, 'value')
  t.equal(v.HASH_IN_QUOTES, 'a # b')
  t.equal(v.SPACED, 'padded')
  t.equal(v.COLON, 'yaml style')
  t.equal(v.UNICODE, 'héllo wörld ✓ 日本')
  t.equal(v.ESCAPED_QUOTE, 'say \\"hi\\"', 'dotenv keeps \\" as written')
  t.equal(v.DUP, 'second', 'the last duplicate wins, as in dotenv')
  t.equal(v.INDENTED, 'ok')
  t.equal(v.JUST_FITS, 'é'.repeat(32_768), '65,536 bytes exactly is fine')
  t.equal(v.SQ_MULTI, 'a\nb')
  t.equal(v.CRLF, 'windows')
  t.equal(v.LAST, 'end')
})

t.test('every line not sent is refused with its line number and reason', async (t) => {
  const { refused, variables } = parseDotenv(EDGE)
  const expected: Array<[number, string, RegExp]> = [
    [17, 'EMPTY', /^empty value$/],
    [18, 'EMPTY_QUOTED', /^empty value$/],
    [19, 'bad-name', /^bad name/],
    [20, '1DIGIT', /^bad name/],
    [21, 'ENVKEEP_TOKEN', /ENVKEEP_/],
    [22, 'DUP', /^duplicate of line 24, which was sent$/],
    [23, '', /^unparseable line/],
    [26, 'UNCLOSED', /quote is not closed/],
    [27, '', /^unparseable line/],
    [28, 'BIG', /^value over 65,536 bytes$/],
  ]
  t.same(
    refused.map((r) => r.line),
    expected.map((e) => e[0]),
    'exactly these lines are refused',
  )
  for (const [line, name, reason] of expected) {
    const r = refused.find((x) => x.line === line)
    t.equal(r?.name, name, `line ${line} name`)
    t.match(r?.reason, reason, `line ${line} reason`)
  }
  for (const r of refused) t.notOk(r.name in variables && r.reason.startsWith('bad'), 'a refused bad name is not sent')
})

t.test('refusal reasons never repeat a value', async (t) => {
  const canary = 'CANARY_VALUE_93f1'
  const text = [`A=${canary} "`, `B=`, `bad.name=${canary}`, `${canary}`, `ENVKEEP_X=${canary}`, `C="${canary}`, `D=${canary}`, `D=${canary}2`].join('\n')
  const { refused } = parseDotenv(text)
  t.ok(refused.length >= 5)
  t.notMatch(JSON.stringify(refused), canary)
})

t.test('duplicates: earlier lines refused, told whether the winner was sent', async (t) => {
  const cases: Array<[string, Record<string, string>, Array<[number, RegExp]>]> = [
    [
      'A=1\nA=2\nA=3',
      { A: '3' },
      [
        [1, /line 3, which was sent/],
        [2, /line 3, which was sent/],
      ],
    ],
    [
      'A=1\nA=',
      {},
      [
        [1, /line 2, which was not sent/],
        [2, /empty value/],
      ],
    ],
    ['A=\nA=2', { A: '2' }, [[1, /line 2, which was sent/]]],
  ]
  for (const [text, vars, refusals] of cases) {
    const r = parseDotenv(text)
    t.same(r.variables, vars, text)
    t.same(
      r.refused.map((x) => x.line),
      refusals.map((x) => x[0]),
      text,
    )
    for (const [i, [, re]] of refusals.entries()) t.match(r.refused[i]!.reason, re, text)
  }
})

t.test('line numbers count CRLF, CR and multi-line values like an editor', async (t) => {
  const r = parseDotenv('A=1\r\nB="x\r\ny"\r\nbroken line\r\nC=3')
  t.same(r.variables, { A: '1', B: 'x\ny', C: '3' })
  t.same(r.lines, { A: 1, B: 2, C: 5 })
  t.same(r.refused, [{ line: 4, name: '', reason: 'unparseable line: not NAME=value' }])
})

// Random files from dotenv's grammar and outside it: whatever we send, dotenv reads the same;
// every non-blank, non-comment line is sent or refused.
const nameArb = fc.oneof(fc.constantFrom('A', 'B', 'C_1', '_X', 'bad-name', '9X', 'ENVKEEP_Y', 'a.b'), fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,6}$/))
const valueArb = fc.string({ unit: fc.constantFrom('a', ' ', '#', '"', "'", '`', '\\', 'n', '$', '\n', '=', 'é', '✓'), maxLength: 12 })
const lineArb = fc.oneof(
  fc.tuple(nameArb, valueArb).map(([n, v]) => `${n}=${v}`),
  fc.tuple(nameArb, valueArb).map(([n, v]) => `export ${n}='${v.replace(/'/g, '')}'`),
  fc.tuple(nameArb, valueArb).map(([n, v]) => `${n}="${v.replace(/"/g, '')}"`),
  fc.tuple(nameArb, valueArb).map(([n, v]) => `${n}=\`${v.replace(/`/g, '')}\``),
  fc.constantFrom('# comment', '', '   ', 'garbage here', 'export', '=x'),
)

t.test('property: agreement with dotenv, and every line accounted for', async (t) => {
  fc.assert(
    fc.property(fc.array(lineArb, { maxLength: 12 }), (lines) => {
      const text = lines.join('\n')
      const ours = parseDotenv(text)
      const theirs = dotenv.parse(text)
      for (const [n, v] of Object.entries(ours.variables)) if (theirs[n] !== v) return false
      const src = text.replace(/\r\n?/g, '\n').split('\n')
      const { entries } = readEntries(text)
      const sentOrRefused = new Set([...Object.values(ours.lines), ...ours.refused.map((r) => r.line)])
      // every entry's line is sent or refused
      for (const e of entries) if (!sentOrRefused.has(e.line)) return false
      // every line with content is inside some entry or refused as unparseable
      return src.every((l, i) => {
        const s = l.trim()
        if (s === '' || s.startsWith('#')) return true
        return entries.some((e) => e.span[0] <= i + 1 && i + 1 <= e.span[1]) || ours.refused.some((r) => r.line === i + 1)
      })
    }),
    { numRuns: 500 },
  )
  t.pass('500 random files')
})

t.test('a line named __proto__ is refused: no JavaScript object could carry it', async (t) => {
  const { refused, variables } = parseDotenv('A=1\n__proto__=polluted\nB=2\n')
  t.same(Object.keys(variables), ['A', 'B'])
  t.equal(Object.getPrototypeOf(variables), Object.getPrototypeOf({}), 'the prototype is untouched')
  t.match(refused, [{ line: 2, name: '__proto__', reason: /^bad name: __proto__ is reserved/ }])
})

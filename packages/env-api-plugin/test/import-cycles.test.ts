import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

// No file of a package imports, through others, itself (issue 19): every
// package's src is read, type-only imports included, and each import circle
// (a strongly connected component of the import graph) fails the test unless
// it is one of the circles known when this check came, listed below to be broken.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')

/** Circles that existed before this check, each by its files (relative to the repository); break them, then drop them here. */
const KNOWN: readonly (readonly string[])[] = []

function sources(dir: string, out: string[] = []): string[] {
  for (const f of readdirSync(dir)) {
    const p = join(dir, f)
    if (statSync(p).isDirectory()) sources(p, out)
    else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) out.push(p)
  }
  return out
}

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"`;]*?\sfrom\s+['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g

/** Each file's relative imports, resolved to files. */
function graph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files)
  const g = new Map<string, string[]>()
  for (const f of files) {
    const deps: string[] = []
    for (const m of readFileSync(f, 'utf8').matchAll(IMPORT)) {
      const spec = (m[1] ?? m[2]) as string
      const target = resolve(dirname(f), spec.replace(/\.js$/, '.ts'))
      if (known.has(target)) deps.push(target)
    }
    g.set(f, deps)
  }
  return g
}

/** Strongly connected components of more than one file (Tarjan). */
function circles(g: Map<string, string[]>): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const out: string[][] = []
  function visit(v: string): void {
    index.set(v, next)
    low.set(v, next)
    next++
    stack.push(v)
    onStack.add(v)
    for (const w of g.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number))
    }
    if (low.get(v) !== index.get(v)) return
    const c: string[] = []
    let w: string
    do {
      w = stack.pop() as string
      onStack.delete(w)
      c.push(w)
    } while (w !== v)
    if (c.length > 1) out.push(c)
  }
  for (const v of g.keys()) if (!index.has(v)) visit(v)
  return out
}

t.test('no new import circle inside a package', async (t) => {
  const packages = readdirSync(join(ROOT, 'packages')).filter((p) => statSync(join(ROOT, 'packages', p, 'src'), { throwIfNoEntry: false })?.isDirectory())
  t.ok(packages.includes('env-api-plugin') && packages.includes('server'), 'the packages are found')
  const known = new Set(KNOWN.map((c) => [...c].sort().join('\n')))
  const found: string[] = []
  for (const p of packages) {
    const g = graph(sources(join(ROOT, 'packages', p, 'src')))
    t.ok(g.size > 0, `${p}: sources read`)
    for (const c of circles(g))
      found.push(
        c
          .map((f) => relative(ROOT, f))
          .sort()
          .join('\n'),
      )
  }
  const fresh = found.filter((c) => !known.has(c))
  t.same(fresh, [], 'every import circle is a known one (break a new one instead of adding it)')
  for (const c of known) if (!found.includes(c)) t.comment(`broken since, drop it from KNOWN:\n${c}`)
})

t.test('the check finds a circle', async (t) => {
  const g = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
  ])
  t.same(
    circles(g).map((c) => c.sort()),
    [['a', 'b', 'c']],
  )
})

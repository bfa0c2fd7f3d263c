/** "Did you mean …": the closest candidates by edit distance (and prefixes), best first. */
export function suggest(input: string, candidates: readonly string[], max = 3): string[] {
  const a = input.toLowerCase()
  const scored = candidates
    .map((c) => {
      const b = c.toLowerCase()
      const d = b.startsWith(a) || a.startsWith(b) ? Math.min(1, distance(a, b)) : distance(a, b)
      return { c, d }
    })
    .filter(({ d }) => d <= Math.max(1, Math.floor(input.length / 3)))
    .sort((x, y) => x.d - y.d || x.c.localeCompare(y.c))
  const best = scored[0]?.d
  return scored
    .filter((s) => s.d === best)
    .slice(0, max)
    .map((s) => s.c)
}

/** Levenshtein distance (small strings: names of commands, options, vaults, environments). */
export function distance(a: string, b: string): number {
  if (a === b) return 0
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const cur = [i]
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    prev = cur
  }
  return prev[b.length]!
}

/** `; did you mean "x"?` (or nothing), for the end of an error sentence. */
export function didYouMean(input: string, candidates: readonly string[], quote = '"'): string {
  const s = suggest(input, candidates)
  return s.length === 0 ? '' : `; did you mean ${s.map((x) => `${quote}${x}${quote}`).join(' or ')}?`
}

/**
 * A CI identity's subject pattern: the whole `sub` claim, where `*` stands for
 * any run of characters (possibly empty) and every other character is literal.
 * `repo:acme/shop:ref:refs/heads/*` matches every branch of acme/shop.
 */
export function subjectMatches(pattern: string, subject: string): boolean {
  const parts = pattern.split('*')
  if (parts.length === 1) return pattern === subject
  const first = parts[0] as string
  const last = parts[parts.length - 1] as string
  if (subject.length < first.length + last.length) return false
  if (!subject.startsWith(first) || !subject.endsWith(last)) return false
  // greedy-free scan: each middle part must appear, in order, between the ends
  let at = first.length
  const end = subject.length - last.length
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i] as string
    const found = subject.indexOf(part, at)
    if (found === -1 || found + part.length > end) return false
    at = found + part.length
  }
  return true
}

/** Why a subject pattern is refused, or null. */
export function subjectPatternProblem(pattern: string): string | null {
  if (pattern.length === 0 || pattern.length > 512) return 'the subject pattern must be 1 to 512 characters'
  if (/^\*+$/.test(pattern)) return 'the subject pattern must not match every subject: name the repository or project'
  if (/[\u0000-\u001f\u007f]/.test(pattern)) return 'the subject pattern must not hold control characters'
  return null
}

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

/** The subject keys whose value is an owner and a project (GitHub Actions, GitLab). */
const PROJECT_KEYS = new Set(['repo', 'project_path'])

export const WILDCARD_ALONE =
  'a subject pattern with * must write out the repository or project before it, e.g. repo:acme/shop:* (GitHub) or project_path:group/project:* (GitLab)'

/**
 * Why a subject pattern is refused, or null. A vault cannot claim subjects
 * by wildcard alone: before the first `*` a pattern writes out a whole
 * `key:value:` pair (GitHub's `repo:OWNER/REPO:`, GitLab's
 * `project_path:GROUP/PROJECT:`), and for those two keys the value is an
 * owner and a project with no wildcard. A pattern with no `*` names one subject.
 */
export function subjectPatternProblem(pattern: string): string | null {
  if (pattern.length === 0 || pattern.length > 512) return 'the subject pattern must be 1 to 512 characters'
  if (/^\*+$/.test(pattern)) return 'the subject pattern must not match every subject: name the repository or project'
  if (/[\u0000-\u001f\u007f]/.test(pattern)) return 'the subject pattern must not hold control characters'
  const star = pattern.indexOf('*')
  if (star === -1) return null
  const pinned = /^([^:]+):([^:]+):/.exec(pattern.slice(0, star))
  if (!pinned) return WILDCARD_ALONE
  const [, key, value] = pinned as unknown as [string, string, string]
  if (PROJECT_KEYS.has(key) && !/^[^/]+\/[^/]+(\/[^/]+)*$/.test(value)) return WILDCARD_ALONE
  return null
}

import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { writeFileAtomic } from './config-store.js'

/**
 * The review links of pushes sent from this machine (the status answer does not name the
 * vault, so the link is remembered when the push is sent). No value, no token.
 */
interface Sent {
  readonly baseUrl: string
  readonly url: string
  readonly at: string
}

const FILE = 'pushes.json'
const KEEP = 200

async function load(dir: string): Promise<Record<string, Sent>> {
  try {
    const o = JSON.parse(await readFile(join(dir, FILE), 'utf8')) as unknown
    return o && typeof o === 'object' ? (o as Record<string, Sent>) : {}
  } catch {
    return {}
  }
}

export async function rememberPush(dir: string, id: string, sent: Sent): Promise<void> {
  try {
    const all = await load(dir)
    all[id] = sent
    const kept = Object.entries(all)
      .sort((a, b) => b[1].at.localeCompare(a[1].at))
      .slice(0, KEEP)
    await writeFileAtomic(join(dir, FILE), JSON.stringify(Object.fromEntries(kept)))
  } catch {
    // a convenience only
  }
}

export async function reviewLinkOf(dir: string, id: string, baseUrl: string): Promise<string | null> {
  const s = (await load(dir))[id.toLowerCase()]
  return s && s.baseUrl === baseUrl && typeof s.url === 'string' ? s.url : null
}

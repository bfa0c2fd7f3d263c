import type { FastifyBaseLogger } from 'fastify'
import { ADMINISTRATOR, type Domain, type Role } from '@envkeep/env-api-plugin'
import type { AccountStore } from '../accounts/account-store.js'
import type { GroupRule } from './oidc-config.js'

const RANK: Record<Role, number> = { viewer: 0, editor: 1, owner: 2 }

/**
 * Applies the group rules at a single sign-on (issue 22): each rule whose group is in the
 * person's groups claim makes them a member of its vault with its role (the highest when
 * several rules name one vault); a membership a rule made is changed or removed when the
 * rules or the groups no longer give it; a membership given by hand is never touched. Every
 * change is in the vault's access log as made by the rule (`group-rule:<group>`).
 */
export async function applyGroupRules(
  o: { accounts: AccountStore; domain: Domain; rules: readonly GroupRule[]; log: FastifyBaseLogger },
  accountId: string,
  groups: readonly string[],
): Promise<void> {
  const wanted = new Map<string, { role: Role; group: string }>()
  for (const rule of o.rules) {
    if (!groups.includes(rule.group)) continue
    const found = await o.domain.findVaultForAdministrator(rule.vault).catch(() => null)
    if (!found) {
      o.log.warn({ group: rule.group }, 'group rule: its vault names no single vault; skipped')
      continue
    }
    const vaultId = found.id
    const had = wanted.get(vaultId)
    if (!had || RANK[rule.role] > RANK[had.role]) wanted.set(vaultId, { role: rule.role, group: rule.group })
  }
  const made = new Map((await o.accounts.listRuleMemberships(accountId)).map((m) => [m.vaultId, m]))
  for (const [vaultId, w] of wanted) {
    const member = (await o.domain.listMembers(ADMINISTRATOR, vaultId)).find((m) => m.personId === accountId)
    const byRule = made.get(vaultId)
    if (!member) {
      const r = await o.domain.changeMemberByRule(ADMINISTRATOR, { vaultId, personId: accountId, role: w.role, expect: 'new', group: w.group })
      if (r.ok) await o.accounts.setRuleMembership(vaultId, accountId, w.group, w.role)
    } else if (byRule && member.role !== w.role) {
      const r = await o.domain.changeMemberByRule(ADMINISTRATOR, { vaultId, personId: accountId, role: w.role, expect: 'existing', group: w.group })
      if (r.ok) await o.accounts.setRuleMembership(vaultId, accountId, w.group, w.role)
    }
    // a member by hand (no rule row) is left as it is
  }
  for (const [vaultId, m] of made) {
    if (wanted.has(vaultId)) continue
    const r = await o.domain.changeMemberByRule(ADMINISTRATOR, { vaultId, personId: accountId, role: null, group: m.group })
    if (r.ok || r.reason === 'not_member') await o.accounts.deleteRuleMembership(vaultId, accountId)
    else o.log.warn({ vault: vaultId, reason: r.reason }, 'group rule: the membership it made could not be removed (the last owner stays)')
  }
}

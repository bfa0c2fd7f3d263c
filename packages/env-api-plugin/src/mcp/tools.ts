import type { FastifyBaseLogger } from 'fastify'
import { McpServer } from '@modelcontextprotocol/server'
import * as z from 'zod/v4'
import type { SignInRecord } from '../adapters/oauth-store.js'
import type { VaultAccess } from '../adapters/vault-store.js'
import { personActor, type PersonActor } from '../domain/actor.js'
import type { Domain } from '../domain/index.js'
import { DomainFailure } from '../domain/failure.js'
import { roleRefusal } from '../domain/permissions.js'
import { vaultTag } from '../errors.js'
import type { ResolvedOptions } from '../options.js'
import { MCP_PROPOSE } from './scopes.js'
import { toolError } from './tool-errors.js'

/** Who calls, for one request: the sign-in, its client's name and address. */
export interface ToolCaller {
  readonly signIn: SignInRecord
  readonly clientName: string
  readonly address: string | null
  readonly log: FastifyBaseLogger
}

type Text = { content: { type: 'text'; text: string }[] }
const text = (value: unknown): Text => ({ content: [{ type: 'text', text: JSON.stringify(value, null, 1) }] })

const vaultArg = z.string().min(1).max(200).describe('The vault id (a UUID, from list_vaults) or its exact name')
const envArg = z.string().min(1).max(100).describe('The environment name, e.g. "development" or "production"')

/** Names only, never a value: may this role see the names of this environment (owners-only ones are for owners)? */
function mayListNames(vault: VaultAccess, env: { ownersOnly: boolean }): boolean {
  return vault.role === 'owner' || !env.ownersOnly
}

/**
 * The endpoint's tools. Every rule is the domain layer's (roles, owners-only,
 * the push rules and the plan's limit); here only what the model is shown:
 * names, environments, who and when, review URLs, statuses; never a value.
 */
export function createMcpServer(opts: ResolvedOptions, domain: Domain, caller: ToolCaller): McpServer {
  const server = new McpServer({ name: `${opts.serviceName}`, version: '0.1.0' }, { capabilities: { tools: { listChanged: false } } })
  const actor: PersonActor = personActor({
    personId: caller.signIn.personId,
    signInId: caller.signIn.id,
    clientId: caller.signIn.clientId,
    address: caller.address,
    label: `MCP ${caller.clientName}`,
  })

  async function locate(vaultRef: string, environment: string) {
    const vaultId = await resolveVault(vaultRef)
    return domain.locateEnvironment(actor, vaultId, environment)
  }

  /** A vault named by id or by exact name among the caller's vaults. */
  async function resolveVault(ref: string): Promise<string> {
    const vaults = await domain.listVaults(actor.personId)
    const v = vaults.find((x) => x.id === ref.toLowerCase()) ?? vaults.find((x) => x.name === ref)
    if (!v) throw new DomainFailure('not_found', 'the vault does not exist or is not shared with you', 'the vault')
    return v.id
  }

  async function namesOf(vaultRef: string, environment: string, tool: string) {
    const { vault, env } = await locate(vaultRef, environment)
    if (!mayListNames(vault, env)) {
      await opts.storage.appendAccessLog({
        vaultId: vault.id,
        at: opts.now(),
        personId: actor.personId,
        signInId: actor.signInId,
        clientId: actor.clientId,
        address: actor.address,
        action: 'refused',
        environment: env.name,
        names: [],
        subject: null,
        detail: `MCP ${caller.clientName}: ${tool}`,
      })
      throw new DomainFailure('forbidden', roleRefusal(vault.role, env, 'see the names of'))
    }
    const names = await opts.storage.listVariableNames(vault.id, env.name)
    return { vault, env, names }
  }

  /** People's names by id, looked up once each; null (the administrator) and unknown ids in words. */
  async function namesOfPeople(ids: readonly (string | null)[]): Promise<(id: string | null) => string> {
    const names = new Map<string, string>()
    for (const id of new Set(ids)) if (id !== null) names.set(id, (await opts.people.getPerson(id))?.name ?? 'a former member')
    return (id) => (id === null ? 'the server administrator' : (names.get(id) ?? 'a former member'))
  }

  async function logNames(vault: VaultAccess, environment: string, names: readonly string[], tool: string): Promise<void> {
    await opts.storage.appendAccessLog({
      vaultId: vault.id,
      at: opts.now(),
      personId: actor.personId,
      signInId: actor.signInId,
      clientId: actor.clientId,
      address: actor.address,
      action: 'read',
      environment,
      names: [...names],
      subject: null,
      detail: `MCP ${caller.clientName}: ${tool} (names only)`,
    })
  }

  const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }

  server.registerTool(
    'list_vaults',
    {
      title: 'List vaults',
      description:
        'Lists the envkeep vaults this person can reach, with their role (owner, editor or viewer) and the environments whose variable names they may see. Never returns a value. Use a vault id or name and an environment from here in the other tools.',
      inputSchema: z.object({}),
      annotations: readOnly,
    },
    async () => {
      try {
        const vaults = await domain.listVaults(actor.personId)
        return text({
          vaults: vaults.map((v) => ({
            id: v.id,
            name: v.name,
            role: v.role,
            environments: v.environments.filter((e) => mayListNames(v, e)).map((e) => e.name),
          })),
        })
      } catch (err) {
        return toolError(caller.log, 'list_vaults', 'listing vaults', err)
      }
    },
  )

  server.registerTool(
    'list_variables',
    {
      title: 'List variable names',
      description:
        'Lists the names of the variables in one environment of a vault, with when each last changed and by whom. Values are never returned, not masked, not their length: ask the person to look in envkeep if a value matters.',
      inputSchema: z.object({ vault: vaultArg, environment: envArg }),
      annotations: readOnly,
    },
    async ({ vault, environment }) => {
      const what = `listing the variable names of ${environment}`
      try {
        const r = await namesOf(vault, environment, 'list_variables')
        await logNames(
          r.vault,
          r.env.name,
          r.names.map((n) => n.name),
          'list_variables',
        )
        const who = await namesOfPeople(r.names.map((n) => n.updatedBy))
        return text({
          vault: r.vault.id,
          environment: r.env.name,
          variables: r.names.map((n) => ({
            name: n.name,
            updated_at: n.updatedAt.toISOString(),
            updated_by: who(n.updatedBy),
          })),
        })
      } catch (err) {
        return toolError(caller.log, 'list_variables', what, err)
      }
    },
  )

  server.registerTool(
    'compare_env',
    {
      title: 'Compare a .env with an environment',
      description:
        'Compares the variable NAMES of a local .env file with an environment of a vault. Send only the names (the part before "="), never the values. Answers which names the environment lacks (missing) and which the environment has that the file lacks (extra).',
      inputSchema: z.object({
        vault: vaultArg,
        environment: envArg,
        names: z.array(z.string().max(256)).max(10000).describe('The variable names found in the local .env file; names only, never values'),
      }),
      annotations: readOnly,
    },
    async ({ vault, environment, names }) => {
      const what = `comparing a .env with ${environment}`
      try {
        const r = await namesOf(vault, environment, 'compare_env')
        const stored = new Set(r.names.map((n) => n.name))
        const local = new Set(names)
        await logNames(r.vault, r.env.name, [...stored], 'compare_env')
        return text({
          vault: r.vault.id,
          environment: r.env.name,
          missing_from_environment: [...local].filter((n) => !stored.has(n)).sort(),
          missing_from_file: [...stored].filter((n) => !local.has(n)).sort(),
        })
      } catch (err) {
        return toolError(caller.log, 'compare_env', what, err)
      }
    },
  )

  server.registerTool(
    'propose_push',
    {
      title: 'Propose changes for review',
      description:
        'Proposes new or changed variables for one environment as a push: nothing changes until a person with write access reviews and applies it on the page at the returned review_url. The values you send are sealed at once and are never shown back to you. Needs the "propose changes" permission; owners-only environments and the vault\'s push rules apply.',
      inputSchema: z.object({
        vault: vaultArg,
        environment: envArg,
        variables: z.record(z.string(), z.string()).describe('Variable name → value pairs to propose'),
      }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async ({ vault, environment, variables }) => {
      let what = `proposing a push to ${environment}`
      try {
        if (!caller.signIn.scopes.includes(MCP_PROPOSE)) {
          throw new DomainFailure(
            'forbidden',
            'this connection was not allowed to propose changes; the person can connect it again and tick "Also let it propose changes"',
          )
        }
        const vaultId = await resolveVault(vault)
        what = `proposing a push to ${environment} of vault ${vaultTag(vaultId)}`
        const imp = await domain.createPush(actor, { vaultId, environment, body: { variables } })
        return text({
          push: imp.id,
          status: imp.status,
          vault: imp.vaultId,
          environment: imp.environment,
          names: [...imp.names],
          overwrites: [...imp.overwrites],
          expires_at: imp.expiresAt.toISOString(),
          review_url: `${opts.baseUrl}/v/${imp.vaultId}/variables/imports/${imp.id}`,
          note: 'A person must review and apply this push; check it with push_status.',
        })
      } catch (err) {
        return toolError(caller.log, 'propose_push', what, err)
      }
    },
  )

  server.registerTool(
    'push_status',
    {
      title: 'Status of a proposed push',
      description:
        'Tells whether a push proposed through propose_push is pending, applied, rejected or expired, with the names it holds. Only pushes this person sent are found.',
      inputSchema: z.object({ push: z.string().uuid().describe('The push id returned by propose_push') }),
      annotations: readOnly,
    },
    async ({ push }) => {
      try {
        const imp = await domain.pushStatus(actor, push.toLowerCase())
        return text({
          push: imp.id,
          status: imp.status,
          environments: [imp.environment],
          names: [...imp.names],
          expires_at: imp.expiresAt.toISOString(),
          decided_at: imp.decidedAt ? imp.decidedAt.toISOString() : null,
        })
      } catch (err) {
        return toolError(caller.log, 'push_status', `reading the status of push ${push.slice(0, 8)}`, err)
      }
    },
  )

  server.registerTool(
    'recent_changes',
    {
      title: 'Recent changes of an environment',
      description:
        'Lists the latest changes of one environment, newest first: when, by whom, how (a push, an edit, a revert…) and which names were added, changed or deleted. Names only, never values.',
      inputSchema: z.object({
        vault: vaultArg,
        environment: envArg,
        limit: z.number().int().min(1).max(50).optional().describe('How many changes, 1 to 50 (default 20)'),
      }),
      annotations: readOnly,
    },
    async ({ vault, environment, limit }) => {
      const what = `listing the recent changes of ${environment}`
      try {
        const vaultId = await resolveVault(vault)
        const h = await domain.listHistory(actor, { vaultId, environment, limit: limit ?? 20 })
        const names = [...new Set(h.changes.flatMap((c) => [...c.added, ...c.changed, ...c.deleted]))]
        await logNames(h.vault, h.env.name, names, 'recent_changes')
        const who = await namesOfPeople(h.changes.map((c) => c.by))
        return text({
          vault: h.vault.id,
          environment: h.env.name,
          changes: h.changes.map((c) => ({
            at: c.at.toISOString(),
            by: who(c.by),
            how: c.how,
            added: [...c.added],
            changed: [...c.changed],
            deleted: [...c.deleted],
          })),
        })
      } catch (err) {
        return toolError(caller.log, 'recent_changes', what, err)
      }
    },
  )

  return server
}

import type { FastifyBaseLogger } from 'fastify'
import { McpServer } from '@modelcontextprotocol/server'
import * as z from 'zod/v4'
import type { SignInRecord } from '../adapters/oauth-store.js'
import type { AccessAction, EnvironmentInfo, VaultAccess } from '../adapters/vault-store.js'
import { personActor, type PersonActor } from '../domain/actor.js'
import type { Domain } from '../domain/index.js'
import { DomainFailure } from '../domain/failure.js'
import { roleRefusal } from '../domain/permissions.js'
import { vaultTag } from '../errors.js'
import type { ResolvedOptions } from '../options.js'
import { MCP_PROPOSE } from './scopes.js'
import { toolError } from './tool-errors.js'
import { reviewUrl } from '../review-path.js'

/** Who calls, for one request: the sign-in, its client's name and address. */
export interface ToolCaller {
  readonly signIn: SignInRecord
  readonly clientName: string
  readonly address: string | null
  readonly log: FastifyBaseLogger
}

const vaultArg = z.string().min(1).max(200).describe('The vault id (a UUID, from list_vaults) or its exact name')
const envArg = z.string().min(1).max(100).describe('The environment name, e.g. "development" or "production"')
const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }

/** Names only, never a value: may this role see the names of this environment (owners-only ones are for owners)? */
function mayListNames(vault: VaultAccess, env: EnvironmentInfo): boolean {
  return vault.role === 'owner' || !env.ownersOnly
}

/**
 * The schema as advertised to the model, but accepting anything at the SDK's
 * own check: the tool checks the arguments itself, so a bad call gets the
 * spec's two-line tool error with a ref, not the SDK's one line.
 */
function advertised<S extends z.ZodType>(schema: S): S {
  const std = schema['~standard']
  return { '~standard': { ...std, validate: (value: unknown) => ({ value }) } } as unknown as S
}

/** Why arguments do not fit, by path and rule: never the value given. */
function argumentProblem(error: z.ZodError): string {
  const issues = error.issues.slice(0, 5).map((i) => `${i.path.length > 0 ? i.path.join('.') : 'the arguments'}: ${i.message}`)
  return `the arguments do not fit this tool (${issues.join('; ')})`.slice(0, 400)
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

  /** One tool: its arguments checked, its answer as JSON text, any failure as the two-line tool error under `step.what`. */
  function tool<S extends z.ZodObject>(
    name: string,
    config: { title: string; description: string; input: S; readOnly: boolean },
    what: string,
    run: (args: z.infer<S>, step: { what: string }) => Promise<unknown>,
  ): void {
    const handler = async (raw: unknown) => {
      const step = { what }
      try {
        const parsed = config.input.safeParse(raw ?? {})
        if (!parsed.success) throw new DomainFailure('invalid', argumentProblem(parsed.error))
        return { content: [{ type: 'text' as const, text: JSON.stringify(await run(parsed.data, step), null, 1) }] }
      } catch (err) {
        return toolError(caller.log, name, step.what, err)
      }
    }
    server.registerTool(
      name,
      {
        title: config.title,
        description: config.description,
        inputSchema: advertised(config.input),
        annotations: config.readOnly ? readOnly : { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      handler as never,
    )
  }

  /** A vault named by id or by exact name among the caller's vaults. */
  async function resolveVault(ref: string): Promise<string> {
    const vaults = await domain.listVaults(actor.personId)
    const v = vaults.find((x) => x.id === ref.toLowerCase()) ?? vaults.find((x) => x.name === ref)
    if (!v) throw new DomainFailure('not_found', 'the vault does not exist or is not shared with you', 'the vault')
    return v.id
  }

  async function log(vault: VaultAccess, env: EnvironmentInfo, action: AccessAction, names: readonly string[], detail: string): Promise<void> {
    await domain.recordAccess(actor, { vaultId: vault.id, action, environment: env.name, names, detail: `MCP ${caller.clientName}: ${detail}` })
  }

  /** The names of an environment the caller may see names of; a refusal is logged as refused. */
  async function namesOf(vaultRef: string, environment: string, name: string, step: { what: string }, phrase: string) {
    const { vault, env } = await domain.locateEnvironment(actor, await resolveVault(vaultRef), environment)
    step.what = `${phrase} ${env.name} of vault ${vaultTag(vault.id)}`
    if (!mayListNames(vault, env)) {
      await log(vault, env, 'refused', [], name)
      throw new DomainFailure('forbidden', roleRefusal(vault.role, env, 'see the names of'))
    }
    return { vault, env, names: await domain.listVariables(actor, { vaultId: vault.id, environment: env.name }) }
  }

  /** People's names by id, looked up once each; null (the administrator) and unknown ids in words. */
  async function namesOfPeople(ids: readonly (string | null)[]): Promise<(id: string | null) => string> {
    const names = new Map<string, string>()
    for (const id of new Set(ids)) if (id !== null) names.set(id, (await opts.people.getPerson(id))?.name ?? 'a former member')
    return (id) => (id === null ? 'the server administrator' : (names.get(id) ?? 'a former member'))
  }

  tool(
    'list_vaults',
    {
      title: 'List vaults',
      description:
        'Lists the envkeep vaults this person can reach, with their role (owner, editor or viewer) and the environments whose variable names they may see. Never returns a value. Use a vault id or name and an environment from here in the other tools.',
      input: z.object({}),
      readOnly: true,
    },
    'listing vaults',
    async () => ({
      vaults: (await domain.listVaults(actor.personId)).map((v) => ({
        id: v.id,
        name: v.name,
        role: v.role,
        environments: v.environments.filter((e) => mayListNames(v, e)).map((e) => e.name),
      })),
    }),
  )

  tool(
    'list_variables',
    {
      title: 'List variable names',
      description:
        'Lists the names of the variables in one environment of a vault, with when each last changed and by whom. Values are never returned, not masked, not their length: ask the person to look in envkeep if a value matters.',
      input: z.object({ vault: vaultArg, environment: envArg }),
      readOnly: true,
    },
    'listing variable names',
    async ({ vault, environment }, step) => {
      const r = await namesOf(vault, environment, 'list_variables (names only)', step, 'listing the variable names of')
      await log(
        r.vault,
        r.env,
        'read',
        r.names.map((n) => n.name),
        'list_variables (names only)',
      )
      const who = await namesOfPeople(r.names.map((n) => n.updatedBy))
      return {
        vault: r.vault.id,
        environment: r.env.name,
        variables: r.names.map((n) => ({ name: n.name, updated_at: n.updatedAt.toISOString(), updated_by: who(n.updatedBy) })),
      }
    },
  )

  tool(
    'compare_env',
    {
      title: 'Compare a .env with an environment',
      description:
        'Compares the variable NAMES of a local .env file with an environment of a vault. Send only the names (the part before "="), never the values. Answers which names the environment lacks and which the environment has that the file lacks.',
      input: z.object({
        vault: vaultArg,
        environment: envArg,
        names: z.array(z.string().max(256)).max(10000).describe('The variable names found in the local .env file; names only, never values'),
      }),
      readOnly: true,
    },
    'comparing a .env with an environment',
    async ({ vault, environment, names }, step) => {
      const r = await namesOf(vault, environment, 'compare_env (names only)', step, 'comparing a .env with')
      const stored = new Set(r.names.map((n) => n.name))
      const local = new Set(names)
      await log(r.vault, r.env, 'read', [...stored], 'compare_env (names only)')
      return {
        vault: r.vault.id,
        environment: r.env.name,
        missing_from_environment: [...local].filter((n) => !stored.has(n)).sort(),
        missing_from_file: [...stored].filter((n) => !local.has(n)).sort(),
      }
    },
  )

  tool(
    'propose_push',
    {
      title: 'Propose changes for review',
      description:
        'Proposes new or changed variables for one environment as a push: nothing changes until a person with write access reviews and applies it on the page at the returned review_url. The values you send are sealed at once and are never shown back to you. Needs the "propose changes" permission; owners-only environments and the vault\'s push rules apply.',
      input: z.object({
        vault: vaultArg,
        environment: envArg,
        variables: z.record(z.string(), z.string()).describe('Variable name → value pairs to propose'),
      }),
      readOnly: false,
    },
    'proposing a push',
    async ({ vault, environment, variables }, step) => {
      if (!caller.signIn.scopes.includes(MCP_PROPOSE)) {
        throw new DomainFailure(
          'forbidden',
          'this connection was not allowed to propose changes; the person can connect it again and tick "Also let it propose changes"',
        )
      }
      const imp = await domain.createPush(actor, { vaultId: await resolveVault(vault), environment, body: { variables } }, (v, env) => {
        step.what = `proposing a push to ${env.name} of vault ${vaultTag(v.id)}`
      })
      return {
        push: imp.id,
        status: imp.status,
        vault: imp.vaultId,
        environment: imp.environment,
        names: [...imp.names],
        overwrites: [...imp.overwrites],
        expires_at: imp.expiresAt.toISOString(),
        review_url: reviewUrl(opts.baseUrl, imp.vaultId, imp.id),
        note: 'A person must review and apply this push; check it with push_status.',
      }
    },
  )

  tool(
    'push_status',
    {
      title: 'Status of a proposed push',
      description:
        'Tells whether a push proposed through propose_push is pending, applied, rejected or expired, with the names it holds. Only pushes this person sent are found.',
      input: z.object({ push: z.string().uuid().describe('The push id returned by propose_push') }),
      readOnly: true,
    },
    'reading the status of a push',
    async ({ push }, step) => {
      step.what = `reading the status of push ${push.slice(0, 8)}`
      const imp = await domain.pushStatus(actor, push.toLowerCase())
      return {
        push: imp.id,
        status: imp.status,
        environments: [imp.environment],
        names: [...imp.names],
        expires_at: imp.expiresAt.toISOString(),
        decided_at: imp.decidedAt ? imp.decidedAt.toISOString() : null,
      }
    },
  )

  tool(
    'recent_changes',
    {
      title: 'Recent changes of an environment',
      description:
        'Lists the latest changes of one environment, newest first: when, by whom, how (a push, an edit, a revert…) and which names were added, changed or deleted. Names only, never values.',
      input: z.object({
        vault: vaultArg,
        environment: envArg,
        limit: z.number().int().min(1).max(50).optional().describe('How many changes, 1 to 50 (default 20)'),
      }),
      readOnly: true,
    },
    'listing recent changes',
    async ({ vault, environment, limit }, step) => {
      const h = await domain.listHistory(actor, { vaultId: await resolveVault(vault), environment, limit: limit ?? 20 })
      step.what = `listing the recent changes of ${h.env.name} of vault ${vaultTag(h.vault.id)}`
      await log(h.vault, h.env, 'read', [...new Set(h.changes.flatMap((c) => [...c.added, ...c.changed, ...c.deleted]))], 'recent_changes (names only)')
      const who = await namesOfPeople(h.changes.map((c) => c.by))
      return {
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
      }
    },
  )

  return server
}

import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Domain } from '../../domain/index.js'
import { wipe } from '../../crypto/wipe.js'
import { vaultTag } from '../../errors.js'
import { requirePushScope } from '../../hooks/authenticate.js'
import { deleteOverrideSchema, readVariablesSchema, setOverrideSchema } from '../../schemas/variables.js'
import { actorOf, param, vaultPhrase } from './context.js'
import { sendJsonBytes } from './json-bytes.js'

/**
 * GET /api/env/:vault/:environment: every variable with a value, decrypted,
 * in name order (the domain layer decides who may, logs the read or the
 * refusal, and fails the whole read if one value does not open).
 */
export function variablesRoutes(untyped: FastifyInstance, domain: Domain): void {
  // request and reply types come from the route's TypeBox schema
  const app = untyped.withTypeProvider<TypeBoxTypeProvider>()
  app.get('/:vault/:environment', {
    schema: readVariablesSchema,
    config: {
      envkeepPhrase: (r: FastifyRequest) => `reading an environment of ${vaultPhrase(param(r, 'vault'))}`,
      envkeepResource: (params) => `an environment of ${vaultPhrase(params.vault ?? '')}`,
    },
    handler: async function readEnvironment(request, reply) {
      // If-None-Match (envkeep run --watch): the answer carries an ETag; when it still holds, 304 without opening a value
      const ifTag = entityTagOf(request.headers['if-none-match'])
      const r = await domain.readEnvironmentIfChanged(
        actorOf(request),
        { vaultId: request.params.vault, environment: request.params.environment, ifTag },
        (vault, env) => {
          request.envkeepOperation = `reading ${env.name} of vault ${vaultTag(vault.id)}`
        },
      )
      if (r.tag !== null) reply.header('etag', `"${r.tag}"`)
      if (r.notModified) return (reply as FastifyReply).code(304).send()
      // the body stays the spec's; which names are the reader's own overrides rides in a header
      if (r.overridden.length > 0) reply.header(OVERRIDDEN_HEADER, r.overridden.join(','))
      // the values as JSON text already (the snapshot's): the answer is spliced around it, not serialized again
      if ('json' in r) {
        const answer = Buffer.concat([readHead(r.vault.id, r.env.name), r.json, CLOSE])
        // plaintext freed as soon as it is sent, not when the GC gets to it (crypto/wipe.ts)
        wipe(r.json)
        reply.raw.once('finish', () => wipe(answer))
        return sendJsonBytes(reply as FastifyReply, answer)
      }
      return { vault: r.vault.id, environment: r.env.name, variables: r.values }
    },
  })

  const overridePhrase = (verb: string) => (r: FastifyRequest) => `${verb} a personal override in ${vaultPhrase(param(r, 'vault'))}`
  app.put('/:vault/:environment/overrides/:name', {
    schema: setOverrideSchema,
    config: { envkeepPhrase: overridePhrase('setting'), envkeepResource: (params) => `a personal override in ${vaultPhrase(params.vault ?? '')}` },
    onRequest: [requirePushScope],
    handler: async function setOverride(request) {
      const { vault, environment, name } = request.params
      const r = await domain.setOverride(actorOf(request), { vaultId: vault, environment, name, value: request.body.value })
      return { vault: r.vault.id, environment: r.env.name, name, overridden: true }
    },
  })
  app.delete('/:vault/:environment/overrides/:name', {
    schema: deleteOverrideSchema,
    config: { envkeepPhrase: overridePhrase('removing'), envkeepResource: (params) => `a personal override in ${vaultPhrase(params.vault ?? '')}` },
    onRequest: [requirePushScope],
    handler: async function deleteOverride(request) {
      const { vault, environment, name } = request.params
      const r = await domain.setOverride(actorOf(request), { vaultId: vault, environment, name, value: null })
      return { vault: r.vault.id, environment: r.env.name, name, overridden: false }
    },
  })
}

/**
 * The one entity tag of an If-None-Match header (`"tag"` or `W/"tag"`); any
 * other shape (a list, `*`) counts as a tag that matches nothing, so the
 * answer is a full read with the current tag. Null without the header.
 */
function entityTagOf(header: string | string[] | undefined): string | null {
  if (header === undefined) return null
  const one = Array.isArray(header) ? (header[0] ?? '') : header
  const m = /^\s*(?:W\/)?"([A-Za-z0-9_-]{1,64})"\s*$/.exec(one)
  return m ? (m[1] as string) : ''
}

const CLOSE = Buffer.from('}')

/** The 200 answer's text up to its variables object (the schema's field order: vault, environment, variables). */
function readHead(vaultId: string, environment: string): Buffer {
  return Buffer.from(`{"vault":${JSON.stringify(vaultId)},"environment":${JSON.stringify(environment)},"variables":`, 'utf8')
}

/** Response header of a read: the names (comma-separated) whose value is the reader's own personal override. */
export const OVERRIDDEN_HEADER = 'envkeep-personal-overrides'

import type { FastifyReply } from 'fastify'

/** The content type of the API's JSON answers. */
export const JSON_TYPE = 'application/json; charset=utf-8'

/**
 * Sends an answer already made as JSON bytes (a read's values spliced around their snapshot, the
 * vault list serialized once per change): no serializer runs again on it.
 */
export function sendJsonBytes(reply: FastifyReply, bytes: Buffer): FastifyReply {
  return reply.type(JSON_TYPE).send(bytes)
}

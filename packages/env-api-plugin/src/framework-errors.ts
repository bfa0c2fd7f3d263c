import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { errors } from './errors.js'
import { renderApiError } from './error-handler.js'

/**
 * For the host's `Fastify({ frameworkErrors })`: errors Fastify raises before
 * any route or plugin runs (a URL it cannot decode, a failed constraint).
 * Fastify's default answer quotes the URL back; this one is the spec's error
 * record, quotes nothing, and logs under a ref like every other failure.
 */
export function envkeepFrameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 400
  const reason = error.code === 'FST_ERR_BAD_URL' ? 'the URL is not valid (bad percent-encoding)' : 'the request is malformed'
  const e = errors.invalidRequest(reason)
  if (status !== 400) Object.defineProperty(e, 'status', { value: status })
  // sent before any hook of the host runs: the header every answer carries is set here
  reply.header('x-content-type-options', 'nosniff')
  void renderApiError(e, request, reply)
}

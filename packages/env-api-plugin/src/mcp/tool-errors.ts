import type { FastifyBaseLogger } from 'fastify'
import { DomainFailure } from '../domain/failure.js'
import { ApiError } from '../errors.js'
import { classifyFailure } from '../failure-class.js'
import { newRef } from '../ref.js'

/** The fixed code of a plan limit on the web and MCP surfaces (spec: "a fixed plan-limit code"). */
export const PLAN_LIMIT_CODE = 'plan_limit'

export interface ToolFailure {
  readonly why: string
  /** after `MCP tool <name>: `, the inner part that failed */
  readonly inner: string | null
  readonly status: number
  readonly code: string
  readonly limit: boolean
}

/** A thrown failure in the words of the spec's tables; a bug says only that it is one. */
export function toolFailureOf(err: unknown): ToolFailure {
  if (err instanceof DomainFailure) {
    switch (err.kind) {
      case 'not_found':
        return {
          why: `${err.what ?? 'the vault or environment'} does not exist or is not shared with you`,
          inner: "database (only what's shared with you is visible)",
          status: 404,
          code: 'not_found',
          limit: false,
        }
      case 'forbidden':
        return { why: err.reason, inner: 'database (your role)', status: 403, code: 'forbidden', limit: false }
      case 'invalid':
        return { why: err.reason, inner: null, status: 400, code: 'invalid_request', limit: false }
      case 'storage_limit':
        return { why: err.reason, inner: 'plan limit', status: 403, code: PLAN_LIMIT_CODE, limit: true }
      case 'conflict':
        return { why: err.reason, inner: null, status: 409, code: 'conflict', limit: false }
    }
  }
  if (err instanceof ApiError) return { why: err.reason, inner: err.where, status: err.status, code: err.code, limit: false }
  const c = classifyFailure(err)
  if (c.kind === 'database')
    return { why: 'the database failed the work; quote the reference in a report', inner: 'database', status: c.status, code: 'server_error', limit: false }
  return { why: 'an internal error occurred; quote the reference in a report', inner: null, status: 500, code: 'server_error', limit: false }
}

/**
 * A tool failure as the spec's two lines: what failed and why; then what,
 * where (`MCP tool <name>`, with the inner part after a colon) and the ref.
 * A plan limit's first line starts `Limit reached:`. Logged under the ref,
 * never with an argument of the call.
 */
export function toolError(log: FastifyBaseLogger, tool: string, what: string, err: unknown): { isError: true; content: { type: 'text'; text: string }[] } {
  const f = toolFailureOf(err)
  const ref = newRef()
  const where = f.inner ? `MCP tool ${tool}: ${f.inner}` : `MCP tool ${tool}`
  const record = { ref, route: 'MCP tool', tool, status: f.status, error: f.code, where, reason: f.why }
  if (f.status >= 500)
    log.error({ ...record, kind: err instanceof Error ? err.name : typeof err, stack: err instanceof Error ? err.stack : undefined }, 'envkeep MCP tool failed')
  else log.info(record, 'envkeep MCP tool refused')
  const first = f.limit ? `Limit reached: ${f.why}` : `${capitalize(what)} failed: ${f.why}`
  const second = `what: ${what}; where: ${where}; ${f.limit ? `code: ${PLAN_LIMIT_CODE}; ` : ''}ref: ${ref}`
  return { isError: true, content: [{ type: 'text', text: `${oneLine(first)}\n${oneLine(second)}` }] }
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1)
}

function oneLine(s: string): string {
  return s.replace(/[\r\n]+/g, ' ')
}

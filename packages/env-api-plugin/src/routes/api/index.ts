import type { FastifyInstance } from 'fastify'
import type { ResolvedOptions } from '../../options.js'

/** Placeholder: filled in by its issue. */
export async function apiRoutes(_app: FastifyInstance, _o: { opts: ResolvedOptions }): Promise<void> {}

import type { FastifyInstance, FastifyRequest } from 'fastify'
import { errors } from '../../errors.js'
import { errorResponses } from '../../schemas/common.js'

/** The paths of the API and the methods each accepts (HEAD comes with GET). */
export const API_PATHS: ReadonlyArray<{ readonly url: string; readonly allow: readonly string[] }> = Object.freeze([
  { url: '/vaults', allow: ['GET', 'HEAD'] },
  { url: '/:vault/:environment', allow: ['GET', 'HEAD'] },
  { url: '/:vault/:environment/imports', allow: ['POST'] },
  { url: '/imports/:import', allow: ['GET', 'HEAD'] },
])

/**
 * 405 method_not_allowed with `Allow` for every other method Fastify knows,
 * on every path. Answered in onRequest, so a body is never read; needs no sign-in.
 */
export function notAllowedRoutes(app: FastifyInstance): void {
  for (const { url, allow } of API_PATHS) {
    const methods = app.supportedMethods.filter((m) => !allow.includes(m))
    const refuse = async function methodNotAllowed(_request: FastifyRequest): Promise<void> {
      throw errors.methodNotAllowed(allow)
    }
    app.route({
      method: methods,
      url,
      schema: { response: errorResponses },
      config: { envkeepAuth: false },
      onRequest: [refuse],
      handler: refuse,
    })
  }
}

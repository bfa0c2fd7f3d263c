import { Type } from 'typebox'
import { errorResponses, Uuid } from './common.js'

export const VaultListed = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    role: Type.String(),
    /** environments the role may read; empty for a viewer */
    environments: Type.Array(Type.String()),
  },
  { additionalProperties: false },
)

export const listVaultsSchema = {
  response: {
    200: Type.Object({ vaults: Type.Array(VaultListed) }, { additionalProperties: false }),
    ...errorResponses,
  },
} as const

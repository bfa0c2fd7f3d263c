import { Type } from 'typebox'
import { errorResponses, Uuid } from './common.js'

export const EnvParams = Type.Object({ vault: Type.String(), environment: Type.String() })

export const readVariablesSchema = {
  params: EnvParams,
  response: {
    200: Type.Object(
      {
        vault: Uuid,
        environment: Type.String(),
        /** name → decrypted value, in name order */
        variables: Type.Record(Type.String(), Type.String()),
      },
      { additionalProperties: false },
    ),
    ...errorResponses,
  },
} as const

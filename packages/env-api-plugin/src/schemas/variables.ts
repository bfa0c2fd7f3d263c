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

/** PUT/DELETE /api/env/:vault/:environment/overrides/:name (issue 24): the caller's own value of one variable. */
export const overrideParams = Type.Object({ vault: Type.String(), environment: Type.String(), name: Type.String() })

const overrideAnswer = Type.Object(
  { vault: Uuid, environment: Type.String(), name: Type.String(), overridden: Type.Boolean() },
  { additionalProperties: false },
)

export const setOverrideSchema = {
  params: overrideParams,
  body: Type.Object({ value: Type.String() }),
  response: { 200: overrideAnswer, ...errorResponses },
} as const

export const deleteOverrideSchema = {
  params: overrideParams,
  response: { 200: overrideAnswer, ...errorResponses },
} as const

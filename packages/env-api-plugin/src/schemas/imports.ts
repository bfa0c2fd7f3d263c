import { Type } from 'typebox'
import { errorResponses, Timestamp, Uuid } from './common.js'
import { EnvParams } from './variables.js'

/**
 * A refused line of the client's file. Types only: names and lengths are
 * checked in the handler, so that a refusal can say why without echoing.
 */
export const RefusedEntry = Type.Object({
  line: Type.Integer(),
  name: Type.String(),
  reason: Type.String(),
})

/** The push request. Shapes only (no coercion on bodies); rules are checked in the handler. */
export const PushBody = Type.Object({
  variables: Type.Record(Type.String(), Type.String()),
  /** an extension of the spec's body (issue 24): name → `ENVIRONMENT.NAME`, references to propose */
  references: Type.Optional(Type.Record(Type.String(), Type.String())),
  refused: Type.Optional(Type.Array(RefusedEntry)),
})

export const ImportStatus = Type.Union([Type.Literal('pending'), Type.Literal('applied'), Type.Literal('rejected'), Type.Literal('expired')])

export const createImportSchema = {
  params: EnvParams,
  body: PushBody,
  response: {
    201: Type.Object(
      {
        import: Uuid,
        status: ImportStatus,
        vault: Uuid,
        environment: Type.String(),
        names: Type.Array(Type.String()),
        overwrites: Type.Array(Type.String()),
        expires_at: Timestamp,
        url: Type.String(),
      },
      { additionalProperties: false },
    ),
    ...errorResponses,
  },
} as const

export const importStatusSchema = {
  params: Type.Object({ import: Type.String() }),
  response: {
    200: Type.Object(
      {
        import: Uuid,
        status: ImportStatus,
        environments: Type.Array(Type.String()),
        names: Type.Array(Type.String()),
        expires_at: Timestamp,
        decided_at: Type.Union([Timestamp, Type.Null()]),
      },
      { additionalProperties: false },
    ),
    ...errorResponses,
  },
} as const

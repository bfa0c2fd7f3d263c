import { Type } from 'typebox'

/** The error record of every API failure: `{error, message, where, ref}`. */
export const ErrorBody = Type.Object(
  {
    error: Type.String(),
    message: Type.String(),
    where: Type.String(),
    ref: Type.String(),
  },
  { additionalProperties: false },
)

/** RFC 3339 UTC with milliseconds, e.g. `2026-11-21T23:10:53.123Z`. */
export const Timestamp = Type.String({ format: 'date-time' })

export const Uuid = Type.String({ format: 'uuid' })

/** Error responses every API route may give (4xx and 5xx share one shape). */
export const errorResponses = {
  '4xx': ErrorBody,
  '5xx': ErrorBody,
} as const

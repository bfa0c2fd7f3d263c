/**
 * A refusal by a rule of the service, in words a person can act on. Each
 * surface renders it its own way (the API as the spec's error record, the
 * pages as a refusal box, the admin commands as a sentence and an exit
 * code); `reason` never repeats what was sent, a value or a secret.
 */
export type FailureKind =
  /** absent, or not shared with the actor: the two are never told apart */
  | 'not_found'
  /** the actor's role does not allow it */
  | 'forbidden'
  /** bad input (a name, a value, a role) */
  | 'invalid'
  /** the state does not allow it (exists already, the last owner, decided already) */
  | 'conflict'
  /** the plan's storage limit */
  | 'storage_limit'

export class DomainFailure extends Error {
  readonly kind: FailureKind
  readonly reason: string
  /** for `not_found`: what was looked for ("the vault or environment", "the push"), for surfaces that name it */
  readonly what: string | undefined

  constructor(kind: FailureKind, reason: string, what?: string) {
    super(reason)
    this.name = 'DomainFailure'
    this.kind = kind
    this.reason = reason
    this.what = what
  }
}

export const fail = {
  notFound: (reason: string, what?: string): DomainFailure => new DomainFailure('not_found', reason, what),
  forbidden: (reason: string): DomainFailure => new DomainFailure('forbidden', reason),
  invalid: (reason: string): DomainFailure => new DomainFailure('invalid', reason),
  conflict: (reason: string): DomainFailure => new DomainFailure('conflict', reason),
  storageLimit: (reason: string): DomainFailure => new DomainFailure('storage_limit', reason),
} as const

/**
 * A refusal by a rule of the service, in words a person can act on, or one
 * of the two failures of its keys. Each surface renders it its own way (the
 * API as the spec's error record, the pages as a refusal box, the admin
 * commands as a sentence and an exit code); `reason` never repeats what was
 * sent, a value or a secret. The domain throws nothing else of its own
 * (storage failures pass through as `StorageError`, bugs as they are).
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
  /** the server has no key for values: nothing sealed can be written or opened */
  | 'not_configured'
  /** a sealed value (or a data key) did not open: nothing is delivered */
  | 'decrypt_failed'
  /** a data key was rewrapped while it was read (`admin rotate-master-key` under way): nothing changed, try again */
  | 'key_rotating'

/** The kinds that are failures of the server's keys, not refusals by a rule. */
export const KEY_FAILURES: readonly FailureKind[] = Object.freeze(['not_configured', 'decrypt_failed', 'key_rotating'])

export class DomainFailure extends Error {
  readonly kind: FailureKind
  readonly reason: string
  /** for `not_found`: what was looked for ("the vault or environment", "the push"), for surfaces that name it */
  readonly what: string | undefined
  /** the kind again, for code that checks `err.code` as on Node's errors (and as on the ApiError the keys' failures were) */
  readonly code: FailureKind

  constructor(kind: FailureKind, reason: string, what?: string, options?: { cause?: unknown }) {
    super(reason, options)
    this.name = 'DomainFailure'
    this.kind = kind
    this.code = kind
    this.reason = reason
    this.what = what
  }
}

/** Whether a failure is a refusal by a rule (as opposed to a failure of the keys). */
export function isRefusal(err: unknown): err is DomainFailure {
  return err instanceof DomainFailure && !KEY_FAILURES.includes(err.kind)
}

export const fail = {
  notFound: (reason: string, what?: string): DomainFailure => new DomainFailure('not_found', reason, what),
  forbidden: (reason: string): DomainFailure => new DomainFailure('forbidden', reason),
  invalid: (reason: string): DomainFailure => new DomainFailure('invalid', reason),
  conflict: (reason: string): DomainFailure => new DomainFailure('conflict', reason),
  storageLimit: (reason: string): DomainFailure => new DomainFailure('storage_limit', reason),
  notConfigured: (): DomainFailure => new DomainFailure('not_configured', 'the server has no key for variables'),
  decryptFailed: (cause?: unknown): DomainFailure =>
    new DomainFailure('decrypt_failed', 'a value did not decrypt; nothing was delivered', undefined, cause === undefined ? undefined : { cause }),
  keyRotating: (cause?: unknown): DomainFailure =>
    new DomainFailure(
      'key_rotating',
      'the master key is being rotated; nothing was changed, try again in a moment',
      undefined,
      cause === undefined ? undefined : { cause },
    ),
} as const

/** The vault as messages name it: the first 8 characters of its id. */
export function vaultTag(vaultId: string): string {
  return vaultId.slice(0, 8)
}

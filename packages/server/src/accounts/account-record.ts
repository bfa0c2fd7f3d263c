/** A local account of the self-hosting server (its own file: the invitation store needs it without the account store). */
export interface AccountRecord {
  readonly id: string
  readonly email: string
  readonly name: string
  /** argon2id PHC string; never logged, never shown */
  readonly passwordHash: string
  readonly createdAt: Date
  /**
   * Whether the email is proven: false for an account made from an invitation link that was
   * shown to the inviter (no SMTP), which anyone could have opened (issue 25: pre-hijacking).
   */
  readonly emailConfirmed: boolean
}

/** What every change of the storage contract answers: done (with what it made), or refused for a reason. */
export type ChangeResult<Reason extends string, Value = undefined> =
  | { readonly ok: true; readonly value: Value }
  | { readonly ok: false; readonly reason: Reason }

/** The value of a change that is never refused (`ChangeResult<never, Value>`). */
export function doneValue<Value>(r: ChangeResult<never, Value>): Value {
  if (r.ok) return r.value
  throw new TypeError('a change that is never refused was refused')
}

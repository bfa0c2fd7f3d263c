/** What every change of the storage contract answers: done (with what it made), or refused for a reason. */
export type ChangeResult<Reason extends string, Value = undefined> =
  | { readonly ok: true; readonly value: Value }
  | { readonly ok: false; readonly reason: Reason }

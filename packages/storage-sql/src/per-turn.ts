/**
 * Collects the calls made in one turn of the event loop (the concurrent requests) and hands
 * them to `flush` together, once that turn's I/O has been read (`setImmediate`): the one
 * mechanism of the batched writes (the SQLite runner's group commit, the access log's
 * appends, the request counters). `flush` settles each item itself and must not throw.
 *
 * `acrossTurns`, with a `flush` that returns a promise: the next batch waits for it, so the
 * calls made while one batch is being written go together in the next, whatever turn they
 * came in (group commit across turns: under load one statement and one commit carry the
 * entries of many requests instead of one per turn; calls that come one at a time still go
 * at once). Not where what `flush` calls groups them itself (the SQLite runner): waiting here
 * too would only delay them.
 */
export function perTurn<T>(flush: (batch: T[]) => unknown, o: { readonly acrossTurns?: boolean } = {}): (item: T) => void {
  let pending: T[] = []
  let writing = false
  const run = (): void => {
    const batch = pending
    pending = []
    const done = flush(batch)
    if (!o.acrossTurns || !(done instanceof Promise)) return
    writing = true
    void done.finally(() => {
      writing = false
      if (pending.length > 0) run() // what came meanwhile goes at once: its turns are over
    })
  }
  return (item) => {
    pending.push(item)
    if (pending.length === 1 && !writing) setImmediate(run)
  }
}

/**
 * Collects the calls made in one turn of the event loop (the concurrent requests) and hands
 * them to `flush` together, once that turn's I/O has been read (`setImmediate`): the one
 * mechanism of the batched writes (the SQLite runner's group commit, the access log's
 * appends, the request counters). `flush` settles each item itself and must not throw.
 */
export function perTurn<T>(flush: (batch: T[]) => unknown): (item: T) => void {
  let pending: T[] = []
  const run = (): void => {
    const batch = pending
    pending = []
    flush(batch)
  }
  return (item) => {
    pending.push(item)
    if (pending.length === 1) setImmediate(run)
  }
}

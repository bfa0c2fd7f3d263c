/**
 * The one optimistic retry of the domain: a write guarded by something
 * read before it (the environment's version, the vault's data key) is
 * computed and tried again when storage says another writer changed that
 * meanwhile, at most `attempts` times. `run` answers its result, or AGAIN;
 * after the last attempt the write is a bug (something keeps changing what
 * it read), thrown as an Error naming `what`: a 500 with the detail only in the log.
 */
export const AGAIN: unique symbol = Symbol('again')

export async function retryOptimistic<T>(attempts: number, what: () => string, run: (attempt: number) => Promise<T | typeof AGAIN>): Promise<T> {
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const r = await run(attempt)
    if (r !== AGAIN) return r
  }
  throw new Error(`envkeep: ${what()}`)
}

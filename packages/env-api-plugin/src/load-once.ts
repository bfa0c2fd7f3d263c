/** A load made at first use and kept (`loadOnce`). */
export interface LoadOnce<T> {
  /** the load: started by the first call, shared by every call while it runs and after it succeeds */
  (): Promise<T>
  /** the load started and not failed, if any (to close what it made) */
  readonly current: Promise<T> | null
}

/**
 * What a server loads only when first asked (a module, and what it builds from it), so that
 * one never asked does not hold it (issue 20): the MCP SDK, the passkey library, the mailer.
 * A load that fails fails its caller and is tried again by the next call.
 */
export function loadOnce<T>(load: () => Promise<T>): LoadOnce<T> {
  let loading: Promise<T> | null = null
  const get = (): Promise<T> => {
    if (!loading) {
      const started = load()
      loading = started
      started.catch(() => {
        if (loading === started) loading = null
      })
    }
    return loading
  }
  return Object.defineProperty(get, 'current', { get: () => loading }) as LoadOnce<T>
}

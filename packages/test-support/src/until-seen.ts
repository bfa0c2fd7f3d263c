/**
 * Asks again until `seen` holds, at most `tries` times, request after request (no timer), and
 * answers the last answer for the test to assert. For a change made by another process: the
 * server hears it through the database (issue 20: within a second), not at once.
 */
export async function untilSeen<T>(ask: () => Promise<T>, seen: (v: T) => boolean, tries = 500): Promise<T> {
  let v = await ask()
  for (let i = 1; i < tries && !seen(v); i++) v = await ask()
  return v
}

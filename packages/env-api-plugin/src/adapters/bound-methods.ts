/** The public methods of `T` as plain properties (what `boundMethods` answers). */
export type BoundMethods<T> = { [K in keyof T as T[K] extends (...args: never[]) => unknown ? K : never]: T[K] }

/**
 * The methods of an object (a class instance: along its prototype chain),
 * each bound to it, as a plain object a backend can spread into its
 * storage object. Spreading an instance directly loses its prototype's
 * methods at run time; with this the combined object is a plain literal the
 * compiler checks against the contract with `satisfies Storage`.
 */
export function boundMethods<T extends object>(o: T): BoundMethods<T> {
  const out: Record<string, unknown> = {}
  for (let proto: object | null = o; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    for (const k of Object.getOwnPropertyNames(proto)) {
      if (k === 'constructor' || k in out) continue
      const v = (o as Record<string, unknown>)[k]
      if (typeof v === 'function') out[k] = (v as (...a: unknown[]) => unknown).bind(o)
    }
  }
  return out as BoundMethods<T>
}

/** envkeep's own exit codes. `run` passes its command's code through instead. */
export const EXIT = Object.freeze({
  ok: 0,
  failure: 1,
  usage: 2,
  needsSignIn: 4,
})

export type ExitCode = (typeof EXIT)[keyof typeof EXIT]

import { close, fdatasync, openSync } from 'node:fs'
import { StorageError } from '@envkeep/env-api-plugin'

/**
 * The disk sync of the runner's commits, off the event loop (issue 20's group commit).
 *
 * Under `synchronous = FULL` SQLite fsyncs the WAL inside COMMIT, and better-sqlite3 runs on
 * the event loop, so every request waits while the disk syncs (~0.2 ms here, each commit).
 * The runner instead commits at `synchronous = NORMAL`, which in WAL mode writes the commit's
 * frames and syncs only around checkpoints (the WAL before one, the database after, the WAL's
 * header when it is reused), and then syncs the WAL file itself with `fdatasync` on libuv's
 * thread pool. A commit's promise settles only after a sync that started after its COMMIT
 * returned: the same guarantee as FULL (the frames of that commit and of every one before it
 * are on disk), while the event loop serves other requests. The writes asked for while a sync
 * runs wait for it to end (`grouped`) and then commit together, and the next sync covers them
 * all (group commit across turns of the event loop).
 *
 * A failed sync is not retried: after a failed fsync the kernel may have dropped the dirty
 * pages, so nothing written since can be trusted to reach the disk. Every waiting and every
 * later commit fails with 503 (`08006`, as SQLite's own `SQLITE_IOERR_FSYNC`), and so does
 * every later read, until the server is restarted.
 */
export interface CommitSync {
  /** Call right after a COMMIT returned: resolves once it (and every commit before it) is on disk. */
  committed(): Promise<void>
  /**
   * Resolves once every commit made so far is on disk, for a read that may have seen one that
   * is not yet (nothing leaves the server before it is durable); `undefined` when they all are.
   */
  durable(): Promise<void> | undefined
  /**
   * Wraps `commit` (one transaction for the items given): items given while no sync runs are
   * committed at once; those given while one runs are held and committed together when it ends,
   * in one transaction that the next sync covers, instead of one transaction per turn that would
   * wait for it anyway.
   */
  grouped<T>(commit: (items: T[]) => void): (items: T[]) => void
  /** The failed sync's error, once one failed (see above). */
  readonly failure: StorageError | undefined
  /** Syncs completed so far (a test counts them on a real file). */
  readonly syncs: number
  /** Waits for a sync in flight, then closes the file (once, however often it is called). */
  close(): Promise<void>
}

type Sync = (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void

interface Waiter {
  readonly upTo: number
  readonly resolve: () => void
  readonly reject: (err: unknown) => void
}

/**
 * Opens the WAL file `walPath` (which SQLite must have created: it exists from the first
 * transaction on a database in WAL mode, and SQLite removes it only when its last connection
 * closes) for syncing; `undefined` when it cannot be opened (the caller keeps SQLite's own
 * FULL sync). `sync` is `fs.fdatasync` but for tests.
 */
export function openCommitSync(walPath: string, sync: Sync = fdatasync): CommitSync | undefined {
  let fd: number
  try {
    fd = openSync(walPath, 'r')
  } catch {
    return undefined
  }
  let committed = 0
  let durable = 0
  let syncs = 0
  let inFlight: Promise<void> | undefined
  let failure: StorageError | undefined
  let waiters: Waiter[] = []
  let idle: (() => void)[] = []
  let closing: Promise<void> | undefined

  const start = (): void => {
    if (inFlight || waiters.length === 0) return
    const upTo = committed
    let finished!: () => void
    // in flight before `sync` is called: its answer may come at once (and then ends it)
    inFlight = new Promise<void>((resolve) => {
      finished = resolve
    })
    sync(fd, (err) => {
      inFlight = undefined
      finished()
      const next = idle
      idle = []
      if (err) {
        failure ??= new StorageError('08006', 'disk sync', { cause: err })
        const all = waiters
        waiters = []
        for (const w of all) w.reject(failure)
        for (const n of next) n() // held writes: they fail on the failure
        return
      }
      syncs++
      durable = upTo
      const later: Waiter[] = []
      const done: Waiter[] = []
      for (const w of waiters) (w.upTo <= upTo ? done : later).push(w)
      waiters = later
      for (const w of done) w.resolve()
      for (const n of next) n() // the writes held meanwhile commit now, and the sync started next covers them
      start()
    })
  }

  const waitFor = (upTo: number): Promise<void> => {
    if (failure) return Promise.reject(failure)
    if (durable >= upTo) return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      waiters.push({ upTo, resolve, reject })
      start()
    })
  }

  return {
    committed: () => waitFor(++committed),
    durable: () => (failure || durable < committed ? waitFor(committed) : undefined),
    grouped<T>(commit: (items: T[]) => void) {
      let held: T[] | undefined
      return (items: T[]) => {
        if (held) {
          for (const item of items) held.push(item)
        } else if (!inFlight) {
          commit(items)
        } else {
          held = items
          idle.push(() => {
            const all = held ?? []
            held = undefined
            commit(all)
          })
        }
      }
    },
    get failure() {
      return failure
    },
    get syncs() {
      return syncs
    },
    close() {
      closing ??= (async () => {
        while (inFlight) await inFlight
        await new Promise<void>((resolve) => close(fd, () => resolve()))
      })()
      return closing
    },
  }
}

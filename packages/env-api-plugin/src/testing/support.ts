import { createServer } from 'node:net'
import { Writable } from 'node:stream'

/**
 * How every browser test here starts Debian's Chromium (with playwright-core's
 * `chromium.launch`): headless, as root, and with none of the background
 * traffic this machine's closed network would refuse.
 */
export const CHROMIUM_LAUNCH = Object.freeze({
  executablePath: '/usr/bin/chromium',
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
})

/** A port that was free on 127.0.0.1 a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

/** A writable stream that keeps everything written to it, as text (fake stdout/stderr, log sinks). */
export class Capture extends Writable {
  text = ''
  override _write(chunk: Buffer | string, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.text += typeof chunk === 'string' ? chunk : chunk.toString('utf8')
    cb()
  }
}

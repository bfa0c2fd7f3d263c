import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from './helpers.js'

const UNIT = new URL('../../../deploy/systemd/envkeep.service', import.meta.url)

t.test('the systemd unit: hardened like Vault’s, and systemd-analyze verify accepts it', async (t) => {
  const text = readFileSync(UNIT, 'utf8')
  for (const line of [
    'User=envkeep',
    'ProtectSystem=strict',
    'NoNewPrivileges=yes',
    'LimitCORE=0',
    'StateDirectory=envkeep',
    'EnvironmentFile=/etc/envkeep/envkeep.env',
    'KillSignal=SIGTERM',
    'ExecReload=/bin/kill -HUP $MAINPID',
    'ExecStart=/usr/local/bin/envkeep-server start',
  ])
    t.ok(text.split('\n').includes(line), line)
  const probe = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' })
  if (probe.error) {
    t.comment(`systemd-analyze is not available (${(probe.error as NodeJS.ErrnoException).code}): verify skipped`)
    return
  }
  // verify checks that ExecStart exists: point it at an executable this machine has
  const dir = tempDir(t)
  const copy = join(dir, 'envkeep.service')
  writeFileSync(copy, text.replace('ExecStart=/usr/local/bin/envkeep-server start', `ExecStart=${process.execPath} --version`))
  const r = spawnSync('systemd-analyze', ['verify', copy], { encoding: 'utf8' })
  t.equal(r.stderr.trim(), '', 'no warning')
  t.equal(r.status, 0)
})

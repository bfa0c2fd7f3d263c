import t from 'tap'
import { runCli } from './helpers.js'

// Issue 25 (outside tests, 6): `envkeep-server admin ci --help` printed "unknown command";
// every group of commands prints its own help.

t.test('a command group with --help prints the commands of that group', async (t) => {
  for (const group of [['admin'], ['admin', 'ci'], ['admin', 'user'], ['admin', 'vault'], ['admin', 'member']]) {
    const r = await runCli([...group, '--help'], {})
    t.equal(r.code, 0, `${group.join(' ')} --help: ${r.stderr}`)
    t.notMatch(r.stdout + r.stderr, /unknown command/)
    t.match(r.stdout, `envkeep-server ${group.join(' ')}:`)
    const usages = r.stdout.split('\n').filter((l) => /^ {2}\S/.test(l))
    t.ok(usages.length > 0, 'lists commands')
    for (const u of usages) t.ok(u.trim().startsWith(group.join(' ')), `only the group's commands: ${u.trim()}`)
  }
  const ci = await runCli(['admin', 'ci', '--help'], {})
  t.match(ci.stdout, /admin ci add /)
  t.match(ci.stdout, /admin ci list /)
  t.same(await runCli(['help', 'admin', 'ci'], {}), ci, 'help admin ci says the same')
})

t.test('a group without a command: its help on stderr, usage exit code; a wrong word is still unknown', async (t) => {
  const r = await runCli(['admin', 'ci'], {})
  t.equal(r.code, 2)
  t.match(r.stderr, /admin ci add /)
  const wrong = await runCli(['admin', 'nope', '--help'], {})
  t.equal(wrong.code, 2)
  t.match(wrong.stderr, /unknown command/)
})

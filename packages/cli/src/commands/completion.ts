import type { Command } from '../command.js'
import { usageError } from '../errors.js'
import { didYouMean } from '../suggest.js'

const SHELLS = ['bash', 'zsh', 'fish'] as const

/** Static completion scripts: command names, then each command's options. */
export function completionScript(shell: (typeof SHELLS)[number], commands: readonly Command[]): string {
  const names = commands.map((c) => c.name)
  const optionsOf = (c: Command) => [...Object.keys(c.options).map((o) => `--${o}`), '--base-url', '--help', '--verbose'].sort()
  if (shell === 'bash') {
    const cases = commands.map((c) => `    ${c.name}) opts="${optionsOf(c).join(' ')}" ;;`).join('\n')
    return `# envkeep completion for bash: source <(envkeep completion bash)
_envkeep() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" opts
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${names.join(' ')} --help --version" -- "$cur"))
    return
  fi
  case "\${COMP_WORDS[1]}" in
${cases}
    *) opts="" ;;
  esac
  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$opts" -- "$cur")); else COMPREPLY=($(compgen -f -- "$cur")); fi
}
complete -F _envkeep envkeep
`
  }
  if (shell === 'zsh') {
    const cases = commands
      .map(
        (c) =>
          `    ${c.name}) _arguments ${optionsOf(c)
            .map((o) => `'${o}'`)
            .join(' ')} '*:file:_files' ;;`,
      )
      .join('\n')
    return `#compdef envkeep
# envkeep completion for zsh: source <(envkeep completion zsh)
_envkeep() {
  if (( CURRENT == 2 )); then
    compadd -- ${names.join(' ')} --help --version
    return
  fi
  case "$words[2]" in
${cases}
  esac
}
compdef _envkeep envkeep
`
  }
  const lines = [
    '# envkeep completion for fish: envkeep completion fish | source',
    `complete -c envkeep -f -n __fish_use_subcommand -a "${names.join(' ')}"`,
    ...commands.flatMap((c) => optionsOf(c).map((o) => `complete -c envkeep -n "__fish_seen_subcommand_from ${c.name}" -l ${o.slice(2)}`)),
  ]
  return `${lines.join('\n')}\n`
}

export function completionCommand(all: () => readonly Command[]): Command {
  return {
    name: 'completion',
    summary: 'print a shell completion script (bash, zsh or fish)',
    help: `Usage: envkeep completion bash|zsh|fish

Prints a completion script for commands and options:
  bash  source <(envkeep completion bash)        (or add it to ~/.bashrc)
  zsh   source <(envkeep completion zsh)         (after compinit)
  fish  envkeep completion fish | source

Options:
  -h, --help       show this help`,
    options: {},
    positionals: [1, 1],
    async run(ctx, { positionals }) {
      const shell = positionals[0]!
      if (!(SHELLS as readonly string[]).includes(shell))
        throw usageError(`no completion for "${shell.slice(0, 20)}"${didYouMean(shell, SHELLS)}`, `shells: ${SHELLS.join(', ')}`)
      ctx.out(completionScript(shell as (typeof SHELLS)[number], all()))
      return 0
    },
  }
}

/**
 * Variables that make a program, its interpreter or the dynamic loader run code (or load it
 * from a path), rather than configure an application. Whoever may store such a name in a
 * vault may run code on the machine of everyone who runs a program with that vault's
 * variables: `envkeep run` holds them back unless the person allows them by name, and the
 * pages mark them. One list, used by the CLI and the pages alike.
 *
 * A pattern ending in `*` is a prefix. Names are compared without regard to case (Windows
 * reads them so, and npm reads `npm_config_*` in either case).
 */
export interface CodeVariableRule {
  readonly pattern: string
  /** Why the name is held back, for a person (a tooltip, `envkeep run --help`). */
  readonly why: string
}

const rules = (why: string, ...patterns: string[]): CodeVariableRule[] => patterns.map((pattern) => ({ pattern, why }))

export const CODE_VARIABLES: readonly CodeVariableRule[] = [
  // the dynamic loader: a shared library of the setter's choice in every program
  ...rules('the dynamic loader loads libraries it names into every program', 'LD_*', 'DYLD_*', 'GCONV_PATH', 'OPENSSL_CONF', 'OPENSSL_ENGINES'),
  // which program a name starts, and what programs start on their own
  ...rules(
    'it decides which program runs',
    'PATH',
    'SHELL',
    'EDITOR',
    'VISUAL',
    'PAGER',
    'MANPAGER',
    'BROWSER',
    'TERMINAL',
    'LESSOPEN',
    'LESSCLOSE',
    'SSH_ASKPASS',
    'SUDO_ASKPASS',
  ),
  // shells
  ...rules(
    'a shell runs its content (or the file it names) as commands',
    'BASH_ENV',
    'ENV',
    'PROMPT_COMMAND',
    'PS0',
    'PS1',
    'PS2',
    'PS3',
    'PS4',
    'SHELLOPTS',
    'BASHOPTS',
    'BASH_FUNC_*',
    'ZDOTDIR',
    'IFS',
  ),
  // Node.js and npm
  ...rules(
    'Node.js or npm reads flags or modules from it (--require, --import, scripts)',
    'NODE_OPTIONS',
    'NODE_PATH',
    'NODE_REPL_EXTERNAL_MODULE',
    'ELECTRON_RUN_AS_NODE',
    'NPM_CONFIG_*',
  ),
  // Python, Perl, Ruby, PHP, Lua, R, Tcl
  ...rules(
    'the interpreter runs or imports code it names',
    'PYTHONSTARTUP',
    'PYTHONPATH',
    'PYTHONHOME',
    'PYTHONUSERBASE',
    'PYTHONBREAKPOINT',
    'PYTHONWARNINGS',
    'PYTHONINSPECT',
    'PERL5OPT',
    'PERL5LIB',
    'PERLLIB',
    'PERL5DB',
    'RUBYOPT',
    'RUBYLIB',
    'GEM_HOME',
    'GEM_PATH',
    'BUNDLE_GEMFILE',
    'PHPRC',
    'PHP_INI_SCAN_DIR',
    'LUA_INIT',
    'LUA_INIT_*',
    'LUA_PATH',
    'LUA_CPATH',
    'R_PROFILE',
    'R_PROFILE_USER',
    'TCLLIBPATH',
  ),
  // the JVM and .NET
  ...rules(
    'the runtime reads agents, flags or classes from it (-javaagent, startup hooks, profilers)',
    'JAVA_TOOL_OPTIONS',
    '_JAVA_OPTIONS',
    'JDK_JAVA_OPTIONS',
    'JAVA_OPTS',
    'CLASSPATH',
    'MAVEN_OPTS',
    'GRADLE_OPTS',
    'DOTNET_STARTUP_HOOKS',
    'DOTNET_ADDITIONAL_DEPS',
    'CORECLR_PROFILER*',
    'CORECLR_ENABLE_PROFILING',
    'COR_PROFILER*',
    'COR_ENABLE_PROFILING',
  ),
  // build tools: Go, Rust, git
  ...rules(
    'the tool runs a program it names (-toolexec, a compiler wrapper, hooks, an ssh or diff command)',
    'GOFLAGS',
    'GOENV',
    'GOTOOLCHAIN',
    'RUSTC',
    'RUSTC_WRAPPER',
    'RUSTC_WORKSPACE_WRAPPER',
    'CARGO_BUILD_RUSTC*',
    'GIT_*',
  ),
  // envkeep's own settings: a vault must not redirect or re-key an envkeep run by the command
  ...rules("envkeep's own settings: they would send a nested envkeep elsewhere or change its sign-in", 'ENVKEEP_*'),
]

/** Harmless names under a held-back prefix. */
const EXCEPTIONS = new Set(['GIT_AUTHOR_NAME', 'GIT_AUTHOR_EMAIL', 'GIT_AUTHOR_DATE', 'GIT_COMMITTER_NAME', 'GIT_COMMITTER_EMAIL', 'GIT_COMMITTER_DATE'])

const exact = new Map<string, string>()
const prefixes: [string, string][] = []
for (const r of CODE_VARIABLES) {
  if (r.pattern.endsWith('*')) prefixes.push([r.pattern.slice(0, -1), r.why])
  else exact.set(r.pattern, r.why)
}

/** Why `name` makes programs run code, or null for an ordinary variable. */
export function codeVariableReason(name: string): string | null {
  const upper = name.toUpperCase()
  if (EXCEPTIONS.has(upper)) return null
  const found = exact.get(upper)
  if (found !== undefined) return found
  for (const [prefix, why] of prefixes) if (upper.startsWith(prefix)) return why
  return null
}

export function isCodeVariable(name: string): boolean {
  return codeVariableReason(name) !== null
}

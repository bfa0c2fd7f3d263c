import t from 'tap'
import { codeVariableReason, isCodeVariable } from '../src/index.js'

t.test('names that make programs run code are recognized, in any case, by name or prefix', async (t) => {
  for (const n of [
    'NODE_OPTIONS',
    'node_options',
    'BASH_ENV',
    'ENV',
    'LD_PRELOAD',
    'LD_AUDIT',
    'DYLD_INSERT_LIBRARIES',
    'PYTHONSTARTUP',
    'PERL5OPT',
    'RUBYOPT',
    'JAVA_TOOL_OPTIONS',
    '_JAVA_OPTIONS',
    'GIT_SSH_COMMAND',
    'GIT_CONFIG_COUNT',
    'PROMPT_COMMAND',
    'npm_config_script_shell',
    'ENVKEEP_BASE_URL',
    'PATH',
  ]) {
    t.ok(isCodeVariable(n), n)
    t.type(codeVariableReason(n), 'string')
  }
})

t.test('ordinary names are not', async (t) => {
  for (const n of ['DATABASE_URL', 'API_KEY', 'NODE_ENV', 'PORT', 'ENVIRONMENT', 'GIT_AUTHOR_NAME', 'LDAP_URL', 'PATHNAME', 'PYTHONUNBUFFERED']) {
    t.notOk(isCodeVariable(n), n)
    t.equal(codeVariableReason(n), null)
  }
})

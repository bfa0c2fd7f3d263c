export {
  MAX_NAME_LENGTH,
  MAX_REFUSED,
  MAX_VALUE_BYTES,
  NAME_RE,
  nameReason,
  parseDotenv,
  readEntries,
  RESERVED_PREFIX,
  valueReason,
  type ParsedEntry,
  type ParseResult,
  type ReadEntry,
  type RefusedLine,
} from './parse.js'
export { CODE_VARIABLES, codeVariableReason, isCodeVariable, type CodeVariableRule } from './code-variables.js'

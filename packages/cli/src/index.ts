export { buildCli, defaultDeps, COMMANDS, type Cli, type CliDeps } from './cli.js'
export { EXIT } from './exit-codes.js'
export { parseDotenv, type ParseResult, type RefusedLine } from '@envkeep/dotenv'
export { formatVariables, type Format } from './formats.js'

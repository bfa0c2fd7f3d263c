#!/usr/bin/env node
import { buildCli } from './cli.js'
process.exitCode = await buildCli().run(process.argv.slice(2))

#!/usr/bin/env node
import { relaunchWithNodeDefaults } from './node-defaults.js'

// before anything else is loaded: the process is replaced once when a Node default is missing
relaunchWithNodeDefaults()
const { runProcess } = await import('./main.js')
await runProcess()

#!/usr/bin/env node
import { runProcess } from './main.js'
await runProcess()

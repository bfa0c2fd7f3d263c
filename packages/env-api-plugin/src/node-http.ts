import { createRequire } from 'node:module'

// node:http and node:https through require(), not `import … from 'node:http'`: an ES import of
// node:http builds its module namespace, which reads its lazy WebSocket/CloseEvent/MessageEvent
// getters and so loads undici (Node's fetch, ~760 KB of source compiled): about 2.3 MB of heap,
// 1.7 MB off-heap and 13 MB of RSS in every process that loads the plugin, though the plugin
// never calls fetch. Used only to send webhooks and to call CI issuers.
const require = createRequire(import.meta.url)

export const http = require('node:http') as typeof import('node:http')
export const https = require('node:https') as typeof import('node:https')

import { createRequire } from 'node:module'

// node:http and node:https as CommonJS, not `import … from 'node:http'`: an ES import of
// node:http builds its module namespace, which reads its lazy WebSocket/CloseEvent/MessageEvent
// getters and so loads undici (Node's fetch, ~760 KB of source compiled): about 2.3 MB of heap,
// 1.7 MB off-heap and 3 MB of RSS in every process that loads the plugin, though the plugin
// never calls fetch. Used only to send webhooks and to call CI issuers.
// (process.getBuiltinModule from Node 22.3; the single executable's bundle has no import.meta.url)
const builtin = <T>(id: string): T => (process.getBuiltinModule?.(id) ?? createRequire(import.meta.url)(id)) as T

export const http = builtin<typeof import('node:http')>('node:http')
export const https = builtin<typeof import('node:https')>('node:https')

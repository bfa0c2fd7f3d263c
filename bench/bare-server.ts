/**
 * The bare baseline, in its own process: Fastify 5 answering, on the same
 * paths, the same JSON bytes the real stack answered once, from memory. No
 * auth, no database, no crypto; a POST still has its JSON body parsed (with
 * the same 1 MiB limit). Started by bench/run.ts with the answers in a file.
 */
import { readFileSync } from 'node:fs'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { serveForBench } from './child.js'

export interface BareAnswer {
  method: 'GET' | 'POST'
  url: string
  status: number
  body: string
}

const file = process.env.BENCH_BARE_ANSWERS
if (!file || !process.send) throw new Error('bench/bare-server is started by bench/run.ts')
const answers = JSON.parse(readFileSync(file, 'utf8')) as BareAnswer[]
const byKey = new Map(answers.map((a) => [`${a.method} ${a.url}`, { status: a.status, body: Buffer.from(a.body, 'utf8') }]))

const app = Fastify({ logger: false, bodyLimit: 1_048_576 })
function answer(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const a = byKey.get(`${request.method} ${request.url}`)
  if (!a) return reply.code(404).send({ error: 'not_found' })
  return reply.code(a.status).header('content-type', 'application/json; charset=utf-8').header('cache-control', 'no-store, private').send(a.body)
}
// the real stack's paths, so routing costs the same
app.get('/api/env/vaults', answer)
app.get('/api/env/:vault/:environment', answer)
app.post('/api/env/:vault/:environment/imports', answer)
await serveForBench(app)

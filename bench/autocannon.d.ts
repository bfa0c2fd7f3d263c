// The part of autocannon 8 the bench uses (the package ships no types).
declare module 'autocannon' {
  namespace autocannon {
    interface Request {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string
      setupRequest?: (req: Request, context: Record<string, unknown>) => Request
    }
    interface Options {
      url: string
      connections?: number
      duration?: number
      pipelining?: number
      overallRate?: number
      headers?: Record<string, string>
      requests?: Request[]
    }
    interface Histogram {
      average: number
      p50: number
      p99: number
      total: number
    }
    interface Result {
      requests: Histogram
      latency: Histogram
      duration: number
      non2xx: number
      errors: number
      timeouts: number
    }
  }
  function autocannon(options: autocannon.Options): Promise<autocannon.Result>
  export default autocannon
}

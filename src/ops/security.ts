import type { FastifyInstance } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The development Sandbox page at GET /graphql loads Apollo's embeddable Sandbox from its CDN
 * and frames it; this policy lets exactly that through (it is served only when Sandbox is on).
 */
const SANDBOX_CSP = [
  "default-src 'none'",
  "script-src 'unsafe-inline' https://embeddable-sandbox.cdn.apollographql.com",
  "style-src 'unsafe-inline' https://fonts.googleapis.com",
  'font-src https://fonts.gstatic.com',
  'img-src https: data:',
  "connect-src 'self' https://*.apollographql.com",
  'frame-src https://sandbox.embed.apollographql.com',
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const API_POLICY: HelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { defaultSrc: ["'none'"], baseUri: ["'none'"], frameAncestors: ["'none'"], formAction: ["'none'"] },
  },
  crossOriginResourcePolicy: { policy: 'same-origin' },
};

/**
 * The headers helmet sets for a policy, worked out once. @fastify/helmet builds a new helmet
 * middleware (and parses the policy again) for every request: about 7% of the CPU of a REST
 * GET /trainer/:id (node --cpu-prof). With a fixed policy the headers never change.
 */
export function helmetHeaders(options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: unknown) => {
      headers[name.toLowerCase()] = String(value);
    },
    removeHeader: (name: string) => {
      delete headers[name.toLowerCase()];
    },
  };
  helmet(options)({} as IncomingMessage, response as unknown as ServerResponse, () => undefined);
  return headers;
}

/**
 * Security headers on every answer (helmet's). The API serves JSON, so its policy allows
 * nothing; /docs keeps Swagger UI's own policy (set by @fastify/swagger-ui for its files, after
 * these), and the development Sandbox page gets the one above.
 */
export async function registerSecurityHeaders(app: FastifyInstance, sandbox: boolean): Promise<void> {
  const headers = helmetHeaders(API_POLICY);
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(headers);
    done();
  });
  if (sandbox) {
    app.addHook('onSend', async (request, reply) => {
      const type = reply.getHeader('content-type');
      if (request.url.startsWith('/graphql') && typeof type === 'string' && type.startsWith('text/html')) {
        reply.header('content-security-policy', SANDBOX_CSP);
      }
    });
  }
}

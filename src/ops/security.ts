import helmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';

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

/**
 * Security headers on every answer (@fastify/helmet). The API serves JSON, so its policy allows
 * nothing; /docs keeps Swagger UI's own policy (set by @fastify/swagger-ui for its files), and
 * the development Sandbox page gets the one above.
 */
export async function registerSecurityHeaders(app: FastifyInstance, sandbox: boolean): Promise<void> {
  await app.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: { defaultSrc: ["'none'"], baseUri: ["'none'"], frameAncestors: ["'none'"], formAction: ["'none'"] },
    },
    crossOriginResourcePolicy: { policy: 'same-origin' },
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

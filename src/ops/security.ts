import type { FastifyInstance } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';

const API_POLICY: HelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { defaultSrc: ["'none'"], baseUri: ["'none'"], frameAncestors: ["'none'"], formAction: ["'none'"] },
  },
  crossOriginResourcePolicy: { policy: 'same-origin' },
};

/**
 * The headers helmet sets for a policy, worked out once on a response of Node's own that is never
 * sent. @fastify/helmet builds a new helmet middleware (and parses the policy again) for every
 * request, a noticeable share of the CPU of a REST GET /trainer/:id (node --cpu-prof); with a
 * fixed policy the headers never change.
 */
function helmetHeaders(options: HelmetOptions): Record<string, string> {
  const request = new IncomingMessage(new Socket());
  const response = new ServerResponse(request);
  helmet(options)(request, response, () => undefined);
  return Object.fromEntries(Object.entries(response.getHeaders()).map(([name, value]) => [name, String(value)]));
}

/**
 * Security headers on every answer (helmet's). The API serves JSON, so its policy allows
 * nothing; /docs keeps Swagger UI's own policy (set by @fastify/swagger-ui for its files, after
 * these), and the development IDE pages get theirs (graphql/ide.ts).
 */
export function registerSecurityHeaders(app: FastifyInstance): void {
  const headers = helmetHeaders(API_POLICY);
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(headers);
    done();
  });
}

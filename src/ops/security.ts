import type { FastifyInstance } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';
import type { IncomingMessage, ServerResponse } from 'node:http';

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
function helmetHeaders(options: HelmetOptions): Record<string, string> {
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
 * these), and the development IDE pages get theirs (graphql/ide.ts).
 */
export function registerSecurityHeaders(app: FastifyInstance): void {
  const headers = helmetHeaders(API_POLICY);
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(headers);
    done();
  });
}

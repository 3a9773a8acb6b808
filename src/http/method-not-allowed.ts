import type {} from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * Every method `url` does not take answers 405 with an Allow header, before the body is read
 * (a PUT with any body is 405, not 415 or 413). OPTIONS, when not taken, answers 204 with
 * Allow; a CORS preflight never gets there, the CORS hook answers it first.
 */
export function methodNotAllowed(app: FastifyInstance, url: string, allowed: readonly string[]): void {
  const allow = [...allowed, ...(allowed.includes('GET') ? ['HEAD'] : []), ...(allowed.includes('OPTIONS') ? [] : ['OPTIONS'])].join(', ');
  app.route({
    method: METHODS.filter((m) => !allowed.includes(m)),
    url,
    schema: { hide: true },
    onRequest: async (request, reply) => {
      reply.header('allow', allow);
      if (request.method === 'OPTIONS') return reply.code(204).send();
      throw new AppError('METHOD_NOT_ALLOWED', `${request.method} is not allowed here; use ${allow}`);
    },
    handler: async () => undefined,
  });
}

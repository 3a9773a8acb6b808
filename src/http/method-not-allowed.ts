import type {} from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { METHODS } from 'node:http';
import { AppError } from '../errors';

/**
 * Every method Node's HTTP parser takes, made routable (Fastify knows a handful by default), so
 * that a path can answer 405 for any of them, TRACE, QUERY and PROPFIND included. CONNECT never
 * reaches routing (Node hands it to the server's 'connect' event, which nothing here takes).
 */
export function routeEveryMethod(app: FastifyInstance): void {
  for (const method of METHODS) {
    if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true });
  }
}

/**
 * Every method `url` does not take answers 405 with an Allow header, before the body is read
 * (a PUT with any body is 405, not 415 or 413). OPTIONS, when not taken, answers 204 with
 * Allow; a CORS preflight never gets there, the CORS hook answers it first. HEAD comes with GET.
 */
export function methodNotAllowed(app: FastifyInstance, url: string, allowed: readonly string[]): void {
  const taken = new Set([...allowed, ...(allowed.includes('GET') ? ['HEAD'] : [])]);
  const allow = [...taken, ...(allowed.includes('OPTIONS') ? [] : ['OPTIONS'])].join(', ');
  app.route({
    method: app.supportedMethods.filter((m) => !taken.has(m)),
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

/** The order an Allow header lists methods in; others (HEAD, OPTIONS, ...) follow. */
const ALLOW_ORDER = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const allowRank = (method: string) => {
  const rank = ALLOW_ORDER.indexOf(method);
  return rank === -1 ? ALLOW_ORDER.length : rank;
};

/**
 * Records the method of every route registered in `app`'s scope from now on (its child plugins'
 * included); once they are all registered, `answerOthers()` makes each of their paths answer 405
 * for every other method (methodNotAllowed). What a path takes is thus said once, by its routes.
 */
export function methodsByPath(app: FastifyInstance): { answerOthers(): void } {
  const taken = new Map<string, string[]>();
  let open = true;
  app.addHook('onRoute', (route) => {
    if (!open) return;
    const methods = typeof route.method === 'string' ? [route.method] : route.method;
    const listed = taken.get(route.url) ?? [];
    for (const method of methods) if (!listed.includes(method)) listed.push(method);
    taken.set(route.url, listed);
  });
  return {
    answerOthers() {
      // The 405 routes registered here are not recorded in turn.
      open = false;
      for (const [url, methods] of taken) {
        const allowed = [...methods].sort((a, b) => allowRank(a) - allowRank(b));
        methodNotAllowed(app, url, allowed);
      }
    },
  };
}

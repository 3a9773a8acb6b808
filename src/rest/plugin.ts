import type { FastifyInstance, onRequestAsyncHookHandler } from 'fastify';
import { attachRequestAuth } from '../auth/request-auth';
import { methodsByPath } from '../http/method-not-allowed';
import type { Admission } from '../http/admission';
import { noStore } from '../http/no-store';
import type { Services } from '../services';
import { accountRoutes } from './accounts.routes';
import { creatureRoutes } from './creatures.routes';
import { guardRoutes } from './route-auth';
import { sessionRoutes } from './sessions.routes';
import { trainerRoutes } from './trainers.routes';
import { createRestValidatorCompiler } from './validation';

/**
 * The REST shim for legacy clients: one plugin per resource (`*.routes.ts`), whose handlers
 * parse, call one service method and reply through present.ts; every rule lives in the services.
 * This scope holds what they share: the database gate, admission, no-store, the validators, the caller
 * (`request.auth`, a RequestAuth, as in GraphQL) and each route's `config.auth` (route-auth.ts),
 * then 405 for the methods a path's routes do not take.
 */
export async function restRoutes(
  app: FastifyInstance,
  { services, requireDatabase, admission }: { services: Services; requireDatabase: onRequestAsyncHookHandler; admission?: Admission },
): Promise<void> {
  app.addHook('onRequest', requireDatabase);
  app.addHook('onRequest', noStore);
  // A page weighs its limit (validated and coerced by then), any other request 1.
  admission?.guard(app, (request) => {
    const limit = (request.query as { limit?: unknown } | undefined)?.limit;
    return typeof limit === 'number' ? limit : 1;
  });
  app.setValidatorCompiler(createRestValidatorCompiler());
  app.addHook(
    'onRequest',
    attachRequestAuth((authorization, onKnown) => services.auth.forRequest(authorization, onKnown)),
  );
  const methods = methodsByPath(app);
  await app.register(async (resources) => {
    guardRoutes(resources);
    for (const routes of [trainerRoutes, sessionRoutes, accountRoutes, creatureRoutes]) await resources.register(routes, { services });
  });
  methods.answerOthers();
}

import type {} from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';

/**
 * Who may call a REST route, said by the route itself (`config: { auth }`) and enforced by
 * the hooks of guardRoutes alone; a handler asks `request.auth` (RequestAuth) who is calling.
 *
 * - `none`: anyone.
 * - `session`: a caller whose session is open, checked (one read) before the body is even
 *   parsed, so an anonymous caller learns nothing about its input.
 * - `token`: a valid token, checked as early but by its signature only (no database); the handler
 *   checks the session alongside its own read (`request.auth.alongside`). The route's input is
 *   refused only after the session is checked: a caller whose session has ended learns that
 *   (401) before anything about its input, as on `session` routes (one read, on refused input only).
 */
export type RouteAuth = 'none' | 'session' | 'token';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route (src/rest/route-auth.ts); every REST route says. */
    auth?: RouteAuth;
  }
}

/** The hooks of the REST scope that apply each route's `config.auth`; a route that does not say is refused at start. */
export function guardRoutes(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const auth = route.config?.auth;
    if (auth === undefined) throw new Error(`${String(route.method)} ${route.url}: say who may call it (config.auth)`);
    if (auth === 'none') return;
    // What the OpenAPI document says of the route.
    if (route.schema) route.schema.security = [{ bearerAuth: [] }];
    // The input is checked before the session; a refusal waits in request.validationError (below).
    if (auth === 'token') route.attachValidation = true;
  });
  app.addHook('onRequest', async (request) => {
    const auth = request.routeOptions.config.auth;
    if (auth === 'session') await request.auth.requireViewer();
    else if (auth === 'token') request.auth.tokenId();
  });
  // Only `token` routes attach their validation errors (above).
  app.addHook('preHandler', async (request) => {
    if (!request.validationError) return;
    await request.auth.requireViewer();
    throw request.validationError;
  });
}

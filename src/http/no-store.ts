import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * An onRequest hook of the API scopes: no answer of the API may be stored by a browser or a
 * shared cache (they depend on the caller's token, or hand one out).
 */
export const noStore = async (_request: FastifyRequest, reply: FastifyReply): Promise<void> => {
  reply.header('cache-control', 'no-store');
};

import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { GraphQLError } from 'graphql';
import { logIfUnexpected, toAppError } from '../error-mapping';
import { ERROR_STATUS } from '../errors';
import { createFormatError, graphqlError } from './format-error';

/*
 * GraphQL answers written before Apollo has the request: errors raised in the /graphql scope, in
 * reading the HTTP request (bad JSON, a body over the limit, another media type, a query string
 * that does not decode, a method the path does not take, the database not connected yet). Their
 * bodies come from the one GraphQL error formatter, as Apollo's and the WebSocket's do.
 */

/** The messages written here are the service's own: nothing to hide in production. */
const format = createFormatError({ isProduction: false });

/** Answers `errors` with `status`, as application/json. */
function sendGraphQLErrors(reply: FastifyReply, status: number, errors: readonly GraphQLError[]): FastifyReply {
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send({ errors: errors.map((error) => format(error.toJSON(), error)) });
}

/** The /graphql scope's error handler: the catalogue error, with its status and headers. */
export function graphqlErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const appError = toAppError(error);
  logIfUnexpected(request.log, error, appError);
  if (appError.retryAfter !== undefined) reply.header('retry-after', String(appError.retryAfter));
  return sendGraphQLErrors(reply, ERROR_STATUS[appError.code], [
    graphqlError(appError.code, appError.message, { originalError: appError }),
  ]);
}

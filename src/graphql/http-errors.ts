import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { logIfUnexpected, toAppError } from '../error-mapping';
import { ERROR_STATUS, type AppError } from '../errors';

/*
 * Errors raised on /graphql before Apollo has the request (bad JSON, a body over the limit,
 * another media type, a method the path does not take, the database not connected yet): the
 * GraphQL scope's error handler answers them in GraphQL's shape, with the catalogue's status.
 */

function sendGraphQLError(reply: FastifyReply, error: AppError): FastifyReply {
  if (error.retryAfter !== undefined) reply.header('retry-after', String(error.retryAfter));
  return reply
    .code(ERROR_STATUS[error.code])
    .type('application/json; charset=utf-8')
    .send({
      errors: [{ message: error.message, extensions: { code: error.code, ...(error.fields?.length ? { fields: error.fields } : {}) } }],
    });
}

export function graphqlErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const appError = toAppError(error);
  logIfUnexpected(request.log, error, appError);
  return sendGraphQLError(reply, appError);
}

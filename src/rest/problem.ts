import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { logIfUnexpected, toAppError } from '../error-mapping';
import { validationFields } from './validation';
import { AppError, ERROR_STATUS, type ErrorCode } from '../errors';

/*
 * RFC 9457 problem details: how the REST shim and every other non-GraphQL path (operations,
 * docs, unknown paths, requests Node's parser refuses) answer an error: one body (problemOf).
 * GraphQL's scope writes GraphQL's shape instead (graphql/http-errors.ts).
 */

const TITLES: Record<ErrorCode, string> = {
  BAD_USER_INPUT: 'Bad request',
  UNAUTHENTICATED: 'Unauthenticated',
  FORBIDDEN: 'Forbidden',
  NOT_FOUND: 'Not found',
  PERSISTED_QUERY_NOT_FOUND: 'Persisted document not found',
  EVENTS_EXPIRED: 'Events no longer kept',
  METHOD_NOT_ALLOWED: 'Method not allowed',
  DUPLICATE_CREATURE: 'Duplicate creature',
  TRAINER_ALREADY_EXISTS: 'Trainer already exists',
  REQUEST_TIMEOUT: 'Request timeout',
  PAYLOAD_TOO_LARGE: 'Payload too large',
  UNSUPPORTED_MEDIA_TYPE: 'Unsupported media type',
  RATE_LIMITED: 'Too many requests',
  INTERNAL_SERVER_ERROR: 'Internal server error',
  SERVICE_UNAVAILABLE: 'Service unavailable',
};

/** The problem details of a catalogue error, with the status they are answered with. */
function problemOf(error: AppError): { status: number; body: string } {
  const status = ERROR_STATUS[error.code];
  const body = JSON.stringify({
    type: `urn:creature-registry:error:${error.code.toLowerCase().replace(/_/g, '-')}`,
    title: TITLES[error.code],
    status,
    detail: error.message,
    code: error.code,
    ...(error.fields?.length ? { fields: error.fields } : {}),
  });
  return { status, body };
}

const PROBLEM_JSON = 'application/problem+json; charset=utf-8';

/** Writes the catalogue error as application/problem+json, with the headers its code calls for. */
export function sendProblem(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  const { status, body } = problemOf(error);
  if (error.retryAfter !== undefined) reply.header('retry-after', String(error.retryAfter));
  if (status === 401) {
    // RFC 6750: how to authenticate, and whether the token that came was refused.
    reply.header(
      'www-authenticate',
      request.headers.authorization ? 'Bearer realm="creature-registry", error="invalid_token"' : 'Bearer realm="creature-registry"',
    );
  }
  return reply.code(status).type(PROBLEM_JSON).send(body);
}

/** A request that failed its route's JSON schema: BAD_USER_INPUT naming each field and its rule. */
function invalidInput(validation: NonNullable<FastifyError['validation']>): AppError {
  const fields = validationFields(validation);
  return new AppError('BAD_USER_INPUT', `Invalid input: ${fields.map((f) => `${f.field} ${f.message}`).join('; ')}`, fields);
}

/** The app's error handler outside GraphQL's scope. */
export function problemErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const appError = error.validation ? invalidInput(error.validation) : toAppError(error);
  logIfUnexpected(request.log, error, appError);
  return sendProblem(request, reply, appError);
}

export function problemNotFoundHandler(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendProblem(request, reply, new AppError('NOT_FOUND', `No route for ${request.method} ${request.url.split('?')[0]}`));
}

/** Requests Node's HTTP parser rejects (bad Content-Length, broken headers) still get a catalogue answer. */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: import('node:net').Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  // Node's server gives up on a request whose headers and body did not all arrive in time.
  const late = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  const { status, body } = problemOf(
    late
      ? new AppError('REQUEST_TIMEOUT', 'The request did not arrive whole in time')
      : new AppError('BAD_USER_INPUT', 'Malformed HTTP request'),
  );
  const reason = late ? 'Request Timeout' : 'Bad Request';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: ${PROBLEM_JSON}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

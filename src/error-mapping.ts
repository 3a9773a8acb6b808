import type { FastifyBaseLogger, FastifyError } from 'fastify';
import { isDatabaseUnavailable, isLockConflict, lockConflictAsAppError, unavailableAsAppError } from './db/errors';
import { AppError } from './errors';

/*
 * Anything thrown anywhere, as a catalogue error: both transports' error writers start here.
 * What only one transport raises (a REST route's schema validation) is mapped by that transport.
 */

/** Turns anything thrown (body parsing, routing, services, resolvers) into a catalogue error. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  // Sql tries such statements again and then throws an AppError; this is for anything else that meets one.
  if (isLockConflict(error)) return lockConflictAsAppError(error);
  // With Retry-After, as where statements fail (db/sql.ts).
  if (isDatabaseUnavailable(error)) return unavailableAsAppError(error) as AppError;
  const fastifyError = error as Partial<FastifyError>;
  // The client hung up while sending its body: nobody is left to answer, and nothing is wrong here.
  if (fastifyError.code === 'ECONNRESET' || fastifyError.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') {
    return new AppError('BAD_USER_INPUT', 'The request body was not received whole');
  }
  const status = fastifyError.statusCode ?? 500;
  switch (status) {
    case 401:
      return new AppError('UNAUTHENTICATED', 'Authentication required');
    case 403:
      return new AppError('FORBIDDEN', 'Forbidden');
    case 404:
      return new AppError('NOT_FOUND', 'Not found');
    case 405:
      return new AppError('METHOD_NOT_ALLOWED', 'Method not allowed');
    case 413:
      return new AppError('PAYLOAD_TOO_LARGE', 'The request body is larger than the limit');
    case 415:
      return new AppError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json');
    case 429:
      return new AppError('RATE_LIMITED', 'Too many requests');
    default:
      // Any other 4xx a plugin raises (400, 414, 431...) is a request we cannot take.
      return status >= 400 && status < 500
        ? new AppError('BAD_USER_INPUT', fastifyError.message ?? 'Bad request')
        : new AppError('INTERNAL_SERVER_ERROR', 'Internal server error');
  }
}

/** Failures that are not the client's are logged (with the cause); the client only gets the catalogue code. */
export function logIfUnexpected(log: FastifyBaseLogger, error: unknown, appError: AppError): void {
  if (appError.code === 'INTERNAL_SERVER_ERROR') log.error({ err: error }, 'unexpected error');
  else if (appError.code === 'SERVICE_UNAVAILABLE') {
    // Mapped where the statement failed (db/sql.ts): the driver's own error is its cause.
    const cause = error instanceof AppError && error.cause !== undefined ? error.cause : error;
    log.error({ err: cause }, isLockConflict(cause) ? 'database busy: lock conflicts outlasted every try' : 'database unavailable');
  }
}

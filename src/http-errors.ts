import type {} from '@fastify/swagger';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from './db/errors';
import { AppError, ERROR_STATUS, type ErrorCode, type FieldError } from './errors';
import { validationFields } from './rest/validation';

const TITLES: Record<ErrorCode, string> = {
  BAD_USER_INPUT: 'Bad request',
  UNAUTHENTICATED: 'Unauthenticated',
  FORBIDDEN: 'Forbidden',
  NOT_FOUND: 'Not found',
  METHOD_NOT_ALLOWED: 'Method not allowed',
  DUPLICATE_CREATURE: 'Duplicate creature',
  TRAINER_ALREADY_EXISTS: 'Trainer already exists',
  PAYLOAD_TOO_LARGE: 'Payload too large',
  UNSUPPORTED_MEDIA_TYPE: 'Unsupported media type',
  RATE_LIMITED: 'Too many requests',
  INTERNAL_SERVER_ERROR: 'Internal server error',
  SERVICE_UNAVAILABLE: 'Service unavailable',
};

/** Turns anything thrown (body parsing, routing, services, resolvers) into a catalogue error. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (isDatabaseUnavailable(error)) {
    return new AppError('SERVICE_UNAVAILABLE', 'The service is temporarily unavailable; try again shortly');
  }
  const fastifyError = error as Partial<FastifyError>;
  if (fastifyError.validation) {
    const fields = validationFields(fastifyError.validation);
    return new AppError('BAD_USER_INPUT', `Invalid input: ${fields.map((f) => `${f.field} ${f.message}`).join('; ')}`, fields);
  }
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

function isGraphQLPath(request: FastifyRequest): boolean {
  return request.url === '/graphql' || request.url.startsWith('/graphql?');
}

/** GraphQL clients get `{ errors: [...] }`; everyone else RFC 9457 problem details. */
export function sendError(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  const status = ERROR_STATUS[error.code];
  const fields: readonly FieldError[] | undefined = error.fields?.length ? error.fields : undefined;
  if (error.retryAfter !== undefined) reply.header('retry-after', String(error.retryAfter));
  if (isGraphQLPath(request)) {
    return reply
      .code(status)
      .type('application/json; charset=utf-8')
      .send({ errors: [{ message: error.message, extensions: { code: error.code, ...(fields ? { fields } : {}) } }] });
  }
  if (status === 401) {
    // RFC 6750: how to authenticate, and whether the token that came was refused.
    reply.header(
      'www-authenticate',
      request.headers.authorization ? 'Bearer realm="creature-registry", error="invalid_token"' : 'Bearer realm="creature-registry"',
    );
  }
  return reply
    .code(status)
    .type('application/problem+json; charset=utf-8')
    .send({
      type: `urn:creature-registry:error:${error.code.toLowerCase().replace(/_/g, '-')}`,
      title: TITLES[error.code],
      status,
      detail: error.message,
      code: error.code,
      ...(fields ? { fields } : {}),
    });
}

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

/** Failures that are not the client's are logged (with the cause); the client only gets the catalogue code. */
export function logIfUnexpected(log: FastifyBaseLogger, error: unknown, appError: AppError): void {
  if (appError.code === 'INTERNAL_SERVER_ERROR') log.error({ err: error }, 'unexpected error');
  else if (appError.code === 'SERVICE_UNAVAILABLE') log.error({ err: error }, 'database unavailable');
}

export function registerErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const appError = toAppError(error);
    logIfUnexpected(request.log, error, appError);
    return sendError(request, reply, appError);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, new AppError('NOT_FOUND', `No route for ${request.method} ${request.url.split('?')[0]}`)),
  );
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * JSON bodies must be UTF-8 (RFC 8259): another declared charset is 415, bytes that are not
 * UTF-8 are 400, instead of being silently turned into U+FFFD and stored. Parsing itself stays
 * Fastify's (which refuses `__proto__` and `constructor.prototype` keys).
 */
export function registerStrictJsonParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1];
    if (charset && !/^utf-?8$/i.test(charset)) {
      done(new AppError('UNSUPPORTED_MEDIA_TYPE', 'JSON bodies must be UTF-8'), undefined);
      return;
    }
    let text: string;
    try {
      text = UTF8.decode(body as Buffer);
    } catch {
      done(new AppError('BAD_USER_INPUT', 'The body is not valid UTF-8'), undefined);
      return;
    }
    void parseJson(request, text, done);
  });
}

/** Requests Node's HTTP parser rejects (bad Content-Length, broken headers) still get a catalogue answer. */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: import('node:net').Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({
    type: 'urn:creature-registry:error:bad-user-input',
    title: TITLES.BAD_USER_INPUT,
    status: 400,
    detail: 'Malformed HTTP request',
    code: 'BAD_USER_INPUT',
  });
  socket.end(
    `HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

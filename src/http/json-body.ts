import { Transform } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** How deep arrays and objects may nest in a body (GraphQL variables included). */
export const MAX_JSON_DEPTH = 64;

/**
 * The deepest nesting of arrays and objects in JSON text, read in one pass without parsing (so a
 * body nested thousands deep costs a scan, not a recursion that could overflow the stack later:
 * in the parser's prototype check, in graphql-js's coercion, in the cost limit's cache key).
 * Stops counting once past `limit`.
 */
export function jsonDepth(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i += 1; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth += 1;
      if (depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (c === 0x5d || c === 0x7d) depth -= 1;
  }
  return deepest;
}

/**
 * JSON bodies must be UTF-8 (RFC 8259): another declared charset is 415, bytes that are not
 * UTF-8 are 400, instead of being silently turned into U+FFFD and stored; nesting deeper than
 * MAX_JSON_DEPTH is 400 before parsing. Parsing itself stays Fastify's (which refuses
 * `__proto__` and `constructor.prototype` keys).
 */
export function registerStrictJsonParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  // JSON Merge Patch (RFC 7396) is JSON, and means something only to PATCH.
  app.addContentTypeParser('application/merge-patch+json', { parseAs: 'buffer' }, (request, body, done) => {
    if (request.method !== 'PATCH')
      done(new AppError('UNSUPPORTED_MEDIA_TYPE', 'application/merge-patch+json is only taken by PATCH'), undefined);
    else parseStrict(request, body, done);
  });
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => parseStrict(request, body, done));

  function parseStrict(request: FastifyRequest, body: string | Buffer, done: (error: Error | null, body?: unknown) => void): void {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1];
    if (charset && !/^utf-?8$/i.test(charset)) {
      done(new AppError('UNSUPPORTED_MEDIA_TYPE', 'JSON bodies must be UTF-8'), undefined);
      return;
    }
    // No body at all, even under a JSON content type (clients that set the header on every
    // request): the route's schema decides whether it needed one.
    if ((body as Buffer).length === 0) {
      done(null, undefined);
      return;
    }
    let text: string;
    try {
      text = UTF8.decode(body as Buffer);
    } catch {
      done(new AppError('BAD_USER_INPUT', 'The body is not valid UTF-8'), undefined);
      return;
    }
    if (jsonDepth(text) > MAX_JSON_DEPTH) {
      done(new AppError('BAD_USER_INPUT', `The body nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      return;
    }
    void parseJson(request, text, (error, parsed) => {
      if (error && validJson(text)) {
        // Fastify's parser refuses `__proto__` and `constructor.prototype` keys with the message of a syntax error.
        done(new AppError('BAD_USER_INPUT', 'JSON bodies may not use the keys __proto__ or constructor.prototype'), undefined);
      } else done(error, parsed);
    });
  }
}

/** Whether `text` is JSON by the plain parser (which takes any keys). */
function validJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** A chunked body may arrive in at most this many chunks (clients send a few large ones). */
const MAX_BODY_CHUNKS = 1024;

/**
 * Refuses a chunked body sent in more than MAX_BODY_CHUNKS chunks, and closes its connection.
 * Each chunk costs a parser callback and a stream event, so a body sent one byte a chunk costs
 * the service far more CPU than the sender. Bodies with a Content-Length are left alone (no
 * stream per request on the hot path; tiny TCP segments cost the sender 40 bytes of headers each).
 */
export function limitBodyChunks(app: FastifyInstance): void {
  // Callback style: no promise per request for the bodies (nearly all) that have a Content-Length.
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (request.headers['transfer-encoding'] === undefined) {
      done(null, payload);
      return;
    }
    let chunks = 0;
    done(
      null,
      payload.pipe(
        new Transform({
          transform(chunk: Buffer, _encoding, callback) {
            chunks += 1;
            if (chunks <= MAX_BODY_CHUNKS) return callback(null, chunk);
            reply.header('connection', 'close');
            return callback(new AppError('BAD_USER_INPUT', `The body arrived in more than ${MAX_BODY_CHUNKS} chunks`));
          },
        }),
      ),
    );
  });
}

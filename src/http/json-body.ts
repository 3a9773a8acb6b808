import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors';

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

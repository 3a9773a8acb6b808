import { AppError } from '../errors';

/** One `name=value` of a query string, decoded as application/x-www-form-urlencoded (`+` is a space); undefined when it does not decode. */
function decodePart(part: string): string | undefined {
  try {
    return decodeURIComponent(part.replaceAll('+', ' '));
  } catch {
    return undefined;
  }
}

/**
 * The parameters of a request target's query string, decoded once and strictly: an escape that
 * does not decode (`%ZZ`, bytes that are not UTF-8) or a name given twice refuses the whole
 * query string (BAD_USER_INPUT). Fastify's own parse keeps a value whose escapes do not all
 * decode as it came, and a repeated name as an array, where another reader (URLSearchParams)
 * decodes leniently and takes the first: two readers of one query string could then read two
 * different texts.
 */
export function strictQueryString(url: string): Record<string, string> {
  const start = url.indexOf('?');
  const params: Record<string, string> = Object.create(null) as Record<string, string>;
  if (start === -1) return params;
  for (const part of url.slice(start + 1).split('&')) {
    if (part === '') continue;
    const equals = part.indexOf('=');
    const name = decodePart(equals === -1 ? part : part.slice(0, equals));
    const value = equals === -1 ? '' : decodePart(part.slice(equals + 1));
    if (name === undefined || value === undefined) {
      throw new AppError('BAD_USER_INPUT', 'The query string is not valid percent-encoding of UTF-8 text');
    }
    if (Object.hasOwn(params, name)) throw new AppError('BAD_USER_INPUT', 'The query string gives one of its parameters more than once');
    params[name] = value;
  }
  return params;
}

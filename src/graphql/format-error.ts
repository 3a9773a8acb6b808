import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import type { FastifyBaseLogger } from 'fastify';
import { isDatabaseUnavailable } from '../db/errors';
import { AppError, type ErrorCode, type FieldError } from '../errors';

/** Apollo's own codes for a request the client got wrong: all of them are BAD_USER_INPUT in our catalogue. */
const CLIENT_ERROR_CODES = new Set([
  'BAD_USER_INPUT',
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'PERSISTED_QUERY_NOT_FOUND',
]);

const VARIABLE_ERROR = /^Variable "\$([\w]+)" (?:got invalid value .*? at "([\w.[\]]+)"|got invalid value|of required type|of non-null type)/;

function variableFields(message: string): FieldError[] | undefined {
  const match = VARIABLE_ERROR.exec(message);
  if (!match) return undefined;
  return [{ field: match[2] ?? match[1]!, message }];
}

function shaped(formatted: GraphQLFormattedError, code: ErrorCode, message: string, fields?: readonly FieldError[]) {
  return {
    message,
    ...(formatted.locations ? { locations: formatted.locations } : {}),
    ...(formatted.path ? { path: formatted.path } : {}),
    extensions: { code, ...(fields?.length ? { fields } : {}) },
  };
}

/**
 * Every GraphQL error leaves with a catalogue code. Application errors keep their message;
 * anything unexpected is logged and masked, so no stack, SQL or driver text reaches a client.
 */
export function createFormatError(log: FastifyBaseLogger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    if (original instanceof AppError) return shaped(formatted, original.code, original.message, original.fields);

    const code = formatted.extensions?.code;
    if (typeof code === 'string' && CLIENT_ERROR_CODES.has(code)) {
      return shaped(formatted, 'BAD_USER_INPUT', formatted.message, variableFields(formatted.message));
    }
    // A GraphQLError with no cause and no path is about the request itself (an unsupported
    // operation type, a persisted-query hash that does not match): the client's mistake.
    if (error instanceof GraphQLError && !error.originalError && !formatted.path) {
      return shaped(formatted, 'BAD_USER_INPUT', formatted.message);
    }
    if (isDatabaseUnavailable(original)) {
      log.error({ err: original }, 'database unavailable');
      return shaped(formatted, 'SERVICE_UNAVAILABLE', 'The service is temporarily unavailable; try again shortly');
    }
    log.error({ err: original, path: formatted.path }, 'unexpected error in a GraphQL operation');
    return shaped(formatted, 'INTERNAL_SERVER_ERROR', 'Internal server error');
  };
}

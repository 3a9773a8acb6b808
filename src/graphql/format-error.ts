import type { ApolloServerPlugin, GraphQLRequestListener } from '@apollo/server';
import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, Kind, parse, visit, type ArgumentNode, type GraphQLFormattedError, type Source, type ValueNode } from 'graphql';
import type { FastifyBaseLogger } from 'fastify';
import { AppError, ERROR_STATUS, type ErrorCode, type FieldError } from '../errors';
import { logIfUnexpected, toAppError } from '../error-mapping';
import type { GraphQLContext } from './context';

/**
 * Apollo's own codes for a request the client got wrong: BAD_USER_INPUT in our catalogue, except
 * a document that fails validation, which keeps Apollo's standard GRAPHQL_VALIDATION_FAILED, and
 * an unknown persisted-query hash, whose PERSISTED_QUERY_NOT_FOUND is in the catalogue: APQ
 * clients (Apollo Client's persisted-queries link) send the text again on that code only.
 */
const CLIENT_ERROR_CODES = new Set(['BAD_USER_INPUT', 'GRAPHQL_PARSE_FAILED', 'BAD_REQUEST', 'OPERATION_RESOLUTION_FAILURE']);

const VARIABLE_ERROR =
  /^Variable "\$([\w]+)" (?:got invalid value(?: .*?)? at "([\w.[\]]+)"|got invalid value|of required type|of non-null type)/;

function variableFields(message: string): FieldError[] | undefined {
  const match = VARIABLE_ERROR.exec(message);
  if (!match) return undefined;
  return [{ field: match[2] ?? match[1], message }];
}

type Located = { loc?: { start: number; end: number } };
const encloses = (outer: Located, inner: { start: number; end: number }) =>
  outer.loc !== undefined && outer.loc.start <= inner.start && inner.end <= outer.loc.end;

/** What an error about a literal or an argument points at. */
const VALUE_KINDS: ReadonlySet<string> = new Set([
  Kind.ARGUMENT,
  Kind.INT,
  Kind.FLOAT,
  Kind.STRING,
  Kind.BOOLEAN,
  Kind.NULL,
  Kind.ENUM,
  Kind.LIST,
  Kind.OBJECT,
  Kind.OBJECT_FIELD,
]);

/** The arguments of a document, parsed once per request text however many errors point into it. */
const argumentsOf = new WeakMap<Source, readonly ArgumentNode[]>();

function argumentNodes(source: Source): readonly ArgumentNode[] {
  let found = argumentsOf.get(source);
  if (!found) {
    const nodes: ArgumentNode[] = [];
    try {
      visit(parse(source), { Argument: (node) => void nodes.push(node) });
    } catch {
      // Not parseable again: no argument to name.
    }
    argumentsOf.set(source, (found = nodes));
  }
  return found;
}

/**
 * For an error about a literal in the query text (`trainers(limit: 1.5)`,
 * `input: { level: "5" }`), the argument path it sits at: `limit`, `input.level`. Only errors
 * that point at an argument or a value are looked up, and the document is read once per request: a document
 * with a hundred errors (unused variables, say) must not be parsed a hundred times.
 */
function literalFields(error: unknown, message: string): FieldError[] | undefined {
  if (!(error instanceof GraphQLError) || !error.source || !error.nodes?.[0]?.loc || !VALUE_KINDS.has(error.nodes[0].kind))
    return undefined;
  const target = error.nodes[0].loc;
  const descend = (value: ValueNode, prefix: string[]): string[] => {
    if (value.kind !== Kind.OBJECT) return prefix;
    const field = value.fields.find((f) => encloses(f, target));
    return field ? descend(field.value, [...prefix, field.name.value]) : prefix;
  };
  const argument = argumentNodes(error.source).find((node) => encloses(node, target));
  return argument ? [{ field: descend(argument.value, [argument.name.value]).join('.'), message }] : undefined;
}

/** Codes only GraphQL answers with (HTTP 400 when the whole request fails), besides the catalogue's. */
export type GraphQLCode = ErrorCode | 'GRAPHQL_VALIDATION_FAILED';

/**
 * The one way this service gives a GraphQL error a code: a catalogue code, with the HTTP status
 * the catalogue gives it (Apollo answers a request refused before execution with it; 400 for
 * GRAPHQL_VALIDATION_FAILED), unless `status` says otherwise.
 */
export function graphqlError(
  code: GraphQLCode,
  message: string,
  options: { nodes?: GraphQLError['nodes']; originalError?: Error; status?: number } = {},
): GraphQLError {
  const status = options.status ?? (code === 'GRAPHQL_VALIDATION_FAILED' ? 400 : ERROR_STATUS[code]);
  return new GraphQLError(message, { nodes: options.nodes, originalError: options.originalError, extensions: { code, http: { status } } });
}

function shaped(formatted: GraphQLFormattedError, code: GraphQLCode, message: string, fields?: readonly FieldError[], retryAfter?: number) {
  return {
    message,
    ...(formatted.locations ? { locations: formatted.locations } : {}),
    ...(formatted.path ? { path: formatted.path } : {}),
    extensions: { code, ...(fields?.length ? { fields } : {}), ...(retryAfter !== undefined ? { retryAfter } : {}) },
  };
}

/**
 * Reasons graphql-js gives for refusing a value that quote the value (a variable's, or a literal
 * of the document), and what is kept of each: the type and the rule, never what was sent.
 */
const VALUE_QUOTES: readonly (readonly [RegExp, string])[] = [
  // "Int cannot represent non-integer value: "abc"", "Enum "Team" cannot represent non-string value: 5."
  [/^((?:Enum "\w+"|\w+) cannot represent [^:]*value): [\s\S]*$/, '$1.'],
  // "Value "X" does not exist in "Team" enum." with X as sent, unescaped: the greedy match finds
  // the last such sentence, graphql-js's own, whose hint after it names enum values only.
  [/^Value [\s\S]* does not exist in ("\w+") enum\.([\s\S]*)$/, 'Value does not exist in $1 enum.$2'],
  // "Expected value of type "Int!", found "abc"." (a literal; also "...; <the scalar's reason>").
  [/^(Expected value of type "[^"]*"), found [\s\S]*$/, '$1.'],
  // "Expected type "X". <what the scalar said>": a scalar's own words may quote the value.
  [/^(Expected type "\w+")\.[\s\S]*$/, '$1.'],
  // "Argument "id" has invalid value <the literal>."
  [/^(Argument "\w+" has invalid value) [\s\S]*$/, '$1.'],
];

function withoutQuotedValue(reason: string): string {
  for (const [pattern, kept] of VALUE_QUOTES) if (pattern.test(reason)) return reason.replace(pattern, kept);
  return reason;
}

const INVALID_VARIABLE = /^(Variable "\$(\w+)" got invalid value) /;

/**
 * A message without the value it refused. graphql-js writes a variable's as `Variable "$i" got
 * invalid value <the value, printed> at "i.team"; <reason>` (the value may be a whole
 * registration, password included, and may itself hold "; " or ` at "`): the reason is the
 * error's cause, so what stands between the name and it is cut out by length, and only the path
 * is kept. Reasons and validation messages that quote a value lose the quote (VALUE_QUOTES).
 */
function withoutValues(message: string, error: unknown): string {
  const variable = INVALID_VARIABLE.exec(message);
  if (!variable) return withoutQuotedValue(message);
  const cause = error instanceof GraphQLError ? error.originalError : undefined;
  const reason = cause instanceof Error ? cause.message : undefined;
  // Not graphql-js's shape after all: nothing after the name is kept.
  if (reason === undefined || !message.endsWith(`; ${reason}`)) return `${variable[1]}.`;
  const printed = message.slice(variable[0].length - 1, message.length - reason.length - 2);
  const name = variable[2];
  const path = / at "([\w.[\]]+)"$/.exec(printed)?.[1];
  const at = path === name || path?.startsWith(`${name}.`) || path?.startsWith(`${name}[`) ? ` at "${path}"` : '';
  return `${variable[1]}${at}; ${withoutQuotedValue(reason)}`;
}

/**
 * What a client is told about its own mistake. No value it sent is echoed (a variable's may be a
 * whole registration, password included; see withoutValues); in production no
 * "Did you mean ...?" hints either, not even about enum values or input fields.
 */
function clientMessage(message: string, error: unknown, isProduction: boolean): string {
  // graphql-armor's limit messages come as "Syntax Error: ...", which they are not.
  const plain = message.replace(/^Syntax Error: (Query (?:depth|has))/, '$1');
  const quiet = withoutValues(plain, error);
  // Linear: a hint quotes at most five GraphQL names (no "?" in them), so each match looks at most
  // 500 characters ahead. The earlier /\s*Did you mean [\s\S]*?\?/ tried every start in a run of
  // spaces: 95 KB of them in an operationName blocked the event loop for 4.7 s.
  const hintless = isProduction ? quiet.replace(/ ?Did you mean [^?]{1,500}\?/g, '') : quiet;
  return hintless.length > MAX_MESSAGE ? `${hintless.slice(0, MAX_MESSAGE)}…` : hintless;
}

/** Messages echo what the client sent (an operation name, a value): at most this much of it comes back. */
const MAX_MESSAGE = 1000;

export function createFormatError({ isProduction }: { isProduction: boolean }) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError =>
    formatError({ ...formatted, message: clientMessage(formatted.message, error, isProduction) }, error);
}

/**
 * For the doors of live events (WebSocket, Server-Sent Events): an error as the client sees it
 * (catalogue code, masked internals), the unexpected ones logged.
 */
export function createLiveFormat(config: { isProduction: boolean }, log: Pick<FastifyBaseLogger, 'error'>) {
  const format = createFormatError(config);
  return (error: GraphQLError): GraphQLFormattedError => {
    const appError = toAppError(error.originalError ?? error);
    // A variable refused by coercion carries graphql-js's reason as its cause: the client's mistake, not a failure.
    if (appError.code === 'INTERNAL_SERVER_ERROR' && error.originalError && error.extensions.code !== 'BAD_USER_INPUT')
      log.error({ err: error.originalError }, 'subscription failed');
    return format(error.toJSON(), error);
  };
}

/**
 * Every GraphQL error leaves with a catalogue code. Application errors keep their message;
 * anything unexpected is masked, so no stack, SQL or driver text reaches a client (the
 * logging plugin below has already logged it, with the request's id).
 */
function formatError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const unwrapped = unwrapResolverError(error);
  // Apollo unwraps resolver errors only (those with a path); an AppError raised before execution
  // (a WebSocket subscribe refused) keeps its code too.
  const original = unwrapped instanceof GraphQLError && unwrapped.originalError instanceof AppError ? unwrapped.originalError : unwrapped;
  if (original instanceof AppError) {
    return shaped(formatted, original.code, original.message, original.fields, original.retryAfter);
  }

  // Apollo answers a mutation sent with GET with HTTP 405: keep code and status in step.
  if (error instanceof GraphQLError && (error.extensions.http as { status?: number } | undefined)?.status === 405) {
    return shaped(formatted, 'METHOD_NOT_ALLOWED', formatted.message);
  }
  const code = formatted.extensions?.code;
  if (code === 'PERSISTED_QUERY_NOT_FOUND') return shaped(formatted, code, formatted.message);
  if (code === 'GRAPHQL_VALIDATION_FAILED') {
    return shaped(formatted, code, formatted.message, literalFields(error, formatted.message));
  }
  if (typeof code === 'string' && CLIENT_ERROR_CODES.has(code)) {
    const fields = variableFields(formatted.message) ?? literalFields(error, formatted.message);
    return shaped(formatted, 'BAD_USER_INPUT', formatted.message, fields);
  }
  // A catalogue code given by graphqlError (an operation check, a refused subscribe) stays; an
  // INTERNAL_SERVER_ERROR (Apollo's own failures) is masked below.
  const kept = typeof code === 'string' && code !== 'INTERNAL_SERVER_ERROR' && Object.hasOwn(ERROR_STATUS, code);
  if (kept && !(error instanceof GraphQLError && error.originalError)) {
    return shaped(formatted, code as ErrorCode, formatted.message);
  }
  // A GraphQLError with no cause and no path is about the request itself (an unsupported
  // operation type, a persisted-query hash that does not match): the client's mistake.
  if (error instanceof GraphQLError && !error.originalError && !formatted.path) {
    return shaped(formatted, 'BAD_USER_INPUT', formatted.message);
  }
  const appError = toAppError(original);
  return shaped(formatted, appError.code, appError.message);
}

/**
 * Logs the errors of an operation that are not the client's. Errors without a path are about the
 * request itself (parse, validation, limits, variables): the client's mistakes, not logged, all
 * the more as graphql-js puts the variable's value (a password, say) in their message. Apollo
 * marks its own failures outside execution (e.g. building the context) INTERNAL_SERVER_ERROR.
 */
export function logUnexpectedErrors(log: FastifyBaseLogger, errors: readonly GraphQLError[]): void {
  for (const error of errors) {
    if (!error.path && error.extensions?.code !== 'INTERNAL_SERVER_ERROR') continue;
    const original = unwrapResolverError(error);
    if (original instanceof AppError) continue;
    logIfUnexpected(log, original, toAppError(original));
  }
}

/** Logs, through the request's own logger, the unexpected errors of what Apollo answers itself. */
export function errorLoggingPlugin(fallback: FastifyBaseLogger): ApolloServerPlugin<GraphQLContext> {
  // One hooks object for every request (they keep no per-request state): nothing allocated per request.
  const hooks: GraphQLRequestListener<GraphQLContext> = {
    async didEncounterErrors({ errors, contextValue }) {
      logUnexpectedErrors(contextValue?.log ?? fallback, errors);
    },
  };
  return { requestDidStart: async () => hooks };
}

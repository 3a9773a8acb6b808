import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ExecutionArgs, GraphQLError, GraphQLSchema } from 'graphql';
import { createHandler, type Request as SseRequest, type ResponseInit } from 'graphql-sse';
import type { Config } from '../config';
import { ERROR_STATUS } from '../errors';
import { clientAddressOf } from '../http/client-address';
import type { Services } from '../services';
import type { Tracing } from '../telemetry/spans';
import type { GraphQLContext } from './context';
import { createLiveFormat, graphqlError } from './format-error';
import { LiveConnection, type Refusal } from './live-connection';
import type { LiveConnections } from './live-connections';
import type { Pipeline } from './pipeline';

/** Events handed to the response but not yet written, before the next one waits (see StreamConnection.writable). */
const MAX_AHEAD = 8;
/** Bytes a response may have unsent before its subscription waits; its reader is dropped once its events pile up in the bus. */
const BUFFERED_BYTES = 512 * 1024;

const STATUS_OF: Record<Refusal, number> = { unauthorized: 401, unavailable: 503, internal: 500 };
const CODE_OF: Record<Refusal, 'UNAUTHENTICATED' | 'SERVICE_UNAVAILABLE' | 'INTERNAL_SERVER_ERROR'> = {
  unauthorized: 'UNAUTHENTICATED',
  unavailable: 'SERVICE_UNAVAILABLE',
  internal: 'INTERNAL_SERVER_ERROR',
};

/** The context of a subscription (graphql-sse wants an indexable one). */
type StreamContext = GraphQLContext & Record<PropertyKey, unknown>;

/** An event of the stream as graphql-sse writes it. */
const sseEvent = (event: 'next' | 'complete', data: unknown) => `event: ${event}\ndata: ${data === null ? '' : JSON.stringify(data)}\n\n`;

/**
 * One Server-Sent Events response that carries one subscription (graphql-sse's distinct
 * connections mode). Refused before its stream starts, it answers with the status and the error;
 * after, its last event is that error, then `complete` (a client would otherwise reconnect).
 */
class StreamConnection extends LiveConnection {
  /** Set when refused before the stream started: answered by the door. */
  refusal: { status: number; error: GraphQLError } | undefined;
  started = false;
  /** Events handed to graphql-sse, and written to the response. */
  produced = 0;
  written = 0;

  constructor(
    private readonly reply: FastifyReply,
    ip: string,
    shared: { readonly services: Services; readonly log: FastifyRequest['log'] },
    private readonly format: (error: GraphQLError) => unknown,
  ) {
    super(ip, shared);
  }

  refuse(why: Refusal, reason: string): void {
    const error = graphqlError(CODE_OF[why], reason);
    if (!this.started) {
      this.refusal ??= { status: STATUS_OF[why], error };
      return;
    }
    this.end(sseEvent('next', { errors: [this.format(error)] }) + sseEvent('complete', null));
  }

  drop(reason: string): void {
    this.shared.log.info({ reason, trainerId: this.trainerId }, 'event stream subscriber dropped');
    this.reply.raw.destroy();
  }

  /**
   * Undefined while the response has little unsent; otherwise a promise that resolves once it has
   * sent most of it (or has closed). graphql-sse takes every event it is handed at once: the events
   * wait in the subscription's bounded queue instead.
   */
  writable(): Promise<void> | undefined {
    return this.whenReady(() => this.produced - this.written <= MAX_AHEAD && this.reply.raw.writableLength <= BUFFERED_BYTES);
  }

  /** Shutdown or a refusal after the start: ends the response (after `last`, when given). */
  end(last = ''): void {
    if (this.reply.raw.writableEnded || this.reply.raw.destroyed) return;
    this.reply.raw.end(last);
  }
}

/**
 * GraphQL over Server-Sent Events (the graphql-sse protocol, distinct connections mode) at
 * /graphql/stream: a GET or POST with `Accept: text/event-stream` carries one subscription, whose
 * events are the response. The same subscriptions as over WebSocket, through the same pipeline
 * (Pipeline.admitSubscription) and context, under the same rules: the token in the Authorization
 * header (or, for a browser's EventSource, which cannot send headers, RFC 6750's `access_token`
 * query parameter), the connection caps of LiveConnections (per address, together with the
 * WebSockets), the Origin rule, the session checks (a logout ends the stream), and a reader too
 * slow is dropped. Only graphql-sse's distinct connections mode: nothing is reserved for later
 * requests (its single connection mode would keep a stream per token for anyone who asks).
 */
export function registerEventStream(
  scope: FastifyInstance,
  config: Config,
  services: Services,
  schema: GraphQLSchema,
  pipeline: Pick<Pipeline, 'admitSubscription'>,
  live: LiveConnections,
  { tracing }: { tracing?: Tracing } = {},
): void {
  const formatLogged = createLiveFormat(config, scope.log);
  const clientAddress = clientAddressOf(config.trustProxy);
  /** Errors answered before the stream starts, with the status of the first one's code. */
  const refusedWith = (errors: readonly GraphQLError[]): readonly [string, ResponseInit] => {
    const code = errors[0]?.extensions.code;
    const status = typeof code === 'string' && code in ERROR_STATUS ? ERROR_STATUS[code as keyof typeof ERROR_STATUS] : 400;
    return [
      JSON.stringify({ errors: errors.map(formatLogged) }),
      { status, statusText: 'Refused', headers: { 'content-type': 'application/json; charset=utf-8' } },
    ];
  };

  const handler = createHandler<FastifyRequest, { connection: StreamConnection }, StreamContext>({
    schema,
    // No token, no reservation: distinct connections only.
    authenticate: () => null,
    onSubscribe: (req, params) => {
      const { connection } = req.context;
      const admitted = pipeline.admitSubscription({
        query: params.query,
        extensions: params.extensions,
        operationName: params.operationName,
        variables: params.variables,
      });
      if ('errors' in admitted) return refusedWith(admitted.errors);
      tracing?.describeOperation(admitted.operation.operation, admitted.operation.name?.value ?? params.operationName);
      const contextValue: StreamContext = { ...connection.contextFor(req.raw.log) };
      const args: ExecutionArgs & { contextValue: StreamContext } = {
        schema,
        document: admitted.document,
        operationName: params.operationName,
        variableValues: params.variables ?? {},
        contextValue,
      };
      return args;
    },
    onNext: (ctx, _req, result) => {
      if (ctx.connection instanceof StreamConnection) ctx.connection.produced += 1;
      return result.errors ? { ...result, errors: result.errors.map((error) => formatLogged(error) as GraphQLError) } : undefined;
    },
  });

  scope.route({
    method: ['GET', 'POST'],
    url: '/graphql/stream',
    handler: async (request, reply) => {
      // An EventSource asks for exactly this; anything else is not a stream request.
      if (request.headers.accept !== 'text/event-stream') {
        return reply
          .code(406)
          .send({ errors: [formatLogged(graphqlError('BAD_USER_INPUT', 'Accept: text/event-stream is required here'))] });
      }
      const ip = clientAddress(request.raw);
      const refused = live.refusal(ip, request.headers.origin);
      if (refused === 403) {
        return reply.code(403).send({ errors: [formatLogged(graphqlError('FORBIDDEN', 'This origin may not open event streams'))] });
      }
      if (refused) {
        const code = refused === 429 ? 'RATE_LIMITED' : 'SERVICE_UNAVAILABLE';
        return reply.code(refused).send({ errors: [formatLogged(graphqlError(code, 'Too many live-events connections'))] });
      }
      const connection = new StreamConnection(reply, ip, { services, log: request.log }, (error) => formatLogged(error));
      const token = (request.query as { access_token?: unknown } | undefined)?.access_token;
      const authorization = request.headers.authorization ?? (typeof token === 'string' ? `Bearer ${token}` : undefined);
      live.add(connection);
      try {
        const refused = () => {
          const { status, error } = connection.refusal!;
          if (status === 401) void reply.header('www-authenticate', 'Bearer');
          return reply.code(status).send({ errors: [formatLogged(error)] });
        };
        if (!(await connection.open(authorization))) return await refused();
        const sseRequest: SseRequest<FastifyRequest, { connection: StreamConnection }> = {
          method: request.method,
          url: request.url,
          headers: { get: (name) => headerOf(request, name) },
          body: (request.body as Record<string, unknown> | undefined) ?? null,
          raw: request,
          context: { connection },
        };
        const [body, init] = await handler(sseRequest);
        if (!body || typeof body === 'string') {
          return await reply
            .code(init.status ?? 200)
            .headers(init.headers ?? {})
            .send(body ?? '');
        }
        // Refused (its token expired, its session ended) while it started.
        if (connection.refusal) {
          await body.return(undefined);
          return await refused();
        }
        // The service began to shut down while it started: no stream begins now (preClose ended the others).
        if (live.closing) {
          await body.return(undefined);
          return await reply
            .code(503)
            .send({ errors: [formatLogged(graphqlError('SERVICE_UNAVAILABLE', 'The service is shutting down'))] });
        }
        // The stream: written here, one event at a time, counting what has gone (see writable).
        reply.hijack();
        reply.raw.writeHead(200, {
          ...headersOf(reply),
          ...init.headers,
          'x-request-id': request.id,
          'cache-control': 'no-store',
        });
        connection.started = true;
        const stop = () => void body.return(undefined);
        reply.raw.once('close', stop);
        try {
          for await (const chunk of body) {
            if (reply.raw.writableEnded || reply.raw.destroyed) break;
            const sent = await new Promise<boolean>((resolve) => reply.raw.write(chunk, (error) => resolve(!error)));
            if (!sent) break;
            if (chunk.startsWith('event: next')) connection.written += 1;
          }
        } finally {
          reply.raw.off('close', stop);
          connection.end();
        }
      } finally {
        live.remove(connection);
      }
    },
  });

  scope.addHook('preClose', async () => {
    live.stop();
    // Each stream ends; its client reconnects (elsewhere) and resumes with `after`.
    for (const connection of live.of(StreamConnection)) connection.end();
  });
}

function headerOf(request: FastifyRequest, name: string): string | null {
  const value = request.headers[name.toLowerCase()];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

/** What hooks have set on the reply so far (CORS, the request id, security headers). */
function headersOf(reply: FastifyReply): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return headers;
}

import type { FastifyInstance } from 'fastify';
import { GraphQLError, type ExecutionArgs, type GraphQLSchema } from 'graphql';
import { handleProtocols, makeServer, type Context } from 'graphql-ws';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { RateLimiterMemory, type RateLimiterRes } from 'rate-limiter-flexible';
import type { RequestAuth } from '../auth/request-auth';
import { isEnded } from '../auth/session-endings';
import type { Config } from '../config';
import { toAppError } from '../error-mapping';
import { AppError } from '../errors';
import { clientAddressOf } from '../http/client-address';
import type { Services } from '../services';
import type { GraphQLContext, TrackedQueue } from './context';
import { createFormatError } from './format-error';
import type { DocumentPolicy } from './document-policy';
import { Loaders } from './loaders';
import type { Tracing } from '../telemetry/spans';

/** The contract's WebSocket limits. */
export const WS_LIMITS = {
  subscriptionsPerConnection: 20,
  /** Subscribe messages one connection may send per 10 s (each may read the database and follow a Redis channel). */
  subscribesPer10s: 30,
  connectionsPerAddress: 50,
  messageBytes: 64 * 1024,
  /** Bytes a socket may have waiting to be sent before its reader counts as too slow and is dropped. */
  bufferedBytes: 1024 * 1024,
  /** Pings every so often; a socket that has not answered the last one by the next is closed. */
  pingMs: 15_000,
  /** How often open connections are checked for expired tokens and ended sessions. */
  sessionCheckMs: 10_000,
  /** Open sockets in all, and how long one may wait before sending connection_init. */
  connections: 10_000,
  initWaitMs: 3_000,
  /** On shutdown, how long sockets get to finish their closing handshake before they are cut. */
  closeGraceMs: 2_000,
} as const;

/** How often a paced subscription looks again whether its socket has sent enough. */
const PACE_POLL_MS = 10;

/**
 * Undefined while the socket has at most half of WS_LIMITS.bufferedBytes unsent; otherwise a
 * promise that resolves once it has (or has closed). Subscriptions that have many events at
 * once (a deleted trainer's DELETED events) wait here instead of filling the socket's buffer
 * past the limit, which would drop their reader.
 */
function whenWritable(connection: { socket: WebSocket; closed: boolean }): Promise<void> | undefined {
  const ready = () => connection.closed || connection.socket.bufferedAmount <= WS_LIMITS.bufferedBytes / 2;
  if (ready()) return undefined;
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      if (!ready()) return;
      clearInterval(timer);
      resolve();
    }, PACE_POLL_MS);
  });
}

/** graphql-ws close codes beyond the standard ones. */
const UNAUTHORIZED = 4401;
const SUBSCRIBER_ALREADY_EXISTS = 4409;
const GOING_AWAY = 1001;
const INTERNAL_ERROR = 1011;
const TRY_AGAIN_LATER = 1013;

interface Connection {
  /** Names the connection to the subscribe rate limiter. */
  readonly key: number;
  readonly socket: WebSocket;
  readonly ip: string;
  /** Every event queue its subscriptions opened: all are ended when the socket closes. */
  readonly queues: Set<TrackedQueue>;
  /**
   * The ids of its subscriptions, from their subscribe message until their execution has ended.
   * graphql-ws forgets an id as soon as the client completes it, even while that subscription is
   * still starting; this set does not, so a reused id cannot start a second copy.
   */
  readonly subscriptions: Set<string>;
  closed: boolean;
  auth?: RequestAuth;
  trainerId?: number;
  sessionId?: number;
  expiresAtMs?: number;
  /** Closes the socket (4401) when its token expires. */
  expiry?: NodeJS.Timeout;
}

type WsContext = Context<Record<string, unknown> | undefined, { connection: Connection }>;

/** setTimeout's longest delay; a later expiry is caught by the periodic check. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const refuse = (socket: Duplex, status: number, reason: string) => {
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${reason.length}\r\n\r\n${reason}`,
  );
};

/**
 * GraphQL over WebSocket (the graphql-transport-ws protocol of graphql-ws) at /graphql, beside
 * Apollo's HTTP transport: the same schema, context, limits and error rules, for subscriptions.
 * The token comes in connection_init's payload (`{ "authorization": "Bearer <token>" }`); a
 * missing or refused one closes the socket with 4401, and so does a token that expires (a timer
 * per socket) or a session that ends while the socket is open (told at once by SessionEndings,
 * from any instance; checked again at every subscribe, and now and then for all sockets in one
 * merged statement). An Origin outside CORS_ORIGINS (when set) is refused, so is a 51st
 * connection from one address, a 21st live subscription on one connection, a subscription id
 * reused while its subscription lives (4409), a 31st subscribe message in 10 s and a message
 * over 64 KiB. What a subscribe's document may do (trusted documents, limits, validation,
 * variables, cost) is the document policy's, as over HTTP (DocumentPolicy.admitSubscription).
 * Sockets are pinged; a reader too slow to take its events is dropped rather than buffered for.
 * On close (SIGTERM) every socket gets 1001 after what was queued for it.
 */
export function registerSubscriptions(
  app: FastifyInstance,
  config: Config,
  services: Services,
  schema: GraphQLSchema,
  policy: DocumentPolicy,
  { sessionCheckMs = WS_LIMITS.sessionCheckMs, tracing }: { sessionCheckMs?: number; tracing?: Tracing } = {},
): void {
  const formatError = createFormatError(config);
  const clientAddress = clientAddressOf(config.trustProxy);
  const connections = new Set<Connection>();
  const perAddress = new Map<string, number>();
  let closing = false;
  let connectionCount = 0;
  const subscribes = new RateLimiterMemory({ points: WS_LIMITS.subscribesPer10s, duration: 10 });

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: WS_LIMITS.messageBytes,
    perMessageDeflate: false,
    handleProtocols: (protocols) => handleProtocols(protocols),
  });

  const close = (connection: Connection, code: number, reason: string) => {
    if (connection.socket.readyState === connection.socket.OPEN || connection.socket.readyState === connection.socket.CONNECTING) {
      connection.socket.close(code, reason);
    }
  };

  /** An error as the client sees it (catalogue code, masked internals); the unexpected ones are logged. */
  /**
   * Why a subscribe must be refused because the socket's token expired or its session ended, with
   * the socket closed (4401); undefined while both hold. Asked of the database at each subscribe,
   * not of what was known when the socket opened.
   */
  const sessionEnded = async (connection: Connection): Promise<GraphQLError | undefined> => {
    const unauthorized = (reason: string) => {
      close(connection, UNAUTHORIZED, reason);
      return new GraphQLError(reason, { extensions: { code: 'UNAUTHENTICATED' } });
    };
    if (connection.expiresAtMs === undefined || connection.expiresAtMs <= Date.now()) return unauthorized('Token expired');
    let caller;
    try {
      caller = await services.trainers.findCaller(connection.trainerId!, connection.sessionId!);
    } catch (error) {
      return new GraphQLError('The session could not be checked', { originalError: toAppError(error) });
    }
    return caller ? undefined : unauthorized('Session ended');
  };

  const formatLogged = (error: GraphQLError) => {
    const appError = toAppError(error.originalError ?? error);
    // A variable refused by coercion carries graphql-js's reason as its cause: the client's mistake, not a failure.
    if (appError.code === 'INTERNAL_SERVER_ERROR' && error.originalError && error.extensions.code !== 'BAD_USER_INPUT')
      app.log.error({ err: error.originalError }, 'subscription failed');
    return formatError(error.toJSON(), error);
  };

  const server = makeServer<Record<string, unknown> | undefined, { connection: Connection }>({
    schema,
    connectionInitWaitTimeout: WS_LIMITS.initWaitMs,
    onConnect: async (ctx: WsContext) => {
      const { connection } = ctx.extra;
      const authorization = ctx.connectionParams?.authorization;
      const auth = services.auth.forRequest(typeof authorization === 'string' ? authorization : undefined);
      let claims;
      let viewer;
      try {
        claims = auth.tokenClaims();
        viewer = await auth.viewer();
      } catch (error) {
        const code = toAppError(error).code;
        if (code === 'UNAUTHENTICATED') close(connection, UNAUTHORIZED, 'Unauthorized');
        // The database is away: try again later, not "unauthorized".
        else if (code === 'SERVICE_UNAVAILABLE') close(connection, TRY_AGAIN_LATER, 'Service unavailable');
        else {
          app.log.error({ err: error }, 'WebSocket connection refused by an unexpected error');
          close(connection, INTERNAL_ERROR, 'Internal server error');
        }
        return false;
      }
      if (!viewer) {
        close(connection, UNAUTHORIZED, 'Unauthorized');
        return false;
      }
      Object.assign(connection, { auth, trainerId: claims.trainerId, sessionId: claims.sessionId, expiresAtMs: claims.expiresAtMs });
      const untilExpiry = claims.expiresAtMs - Date.now();
      if (untilExpiry <= MAX_TIMER_MS) {
        connection.expiry = setTimeout(() => close(connection, UNAUTHORIZED, 'Token expired'), Math.max(0, untilExpiry));
        connection.expiry.unref();
      }
      return true;
    },
    onSubscribe: async (ctx: WsContext, id, payload) => {
      const { connection } = ctx.extra;
      // One live subscription per id: a subscribe that reuses the id of one still starting or
      // running is what the protocol answers with 4409 when graphql-ws can tell.
      if (connection.subscriptions.has(id)) {
        close(connection, SUBSCRIBER_ALREADY_EXISTS, `Subscriber for ${id} already exists`);
        return [new GraphQLError(`Subscriber for ${id} already exists`, { extensions: { code: 'BAD_USER_INPUT' } })];
      }
      // Reserved at once, before anything is awaited: the next message already sees it.
      const full = connection.subscriptions.size >= WS_LIMITS.subscriptionsPerConnection;
      if (!full) connection.subscriptions.add(id);
      let started = false;
      try {
        // Every subscribe message counts, whatever becomes of it.
        const limited = await subscribes.consume(connection.key).then(
          () => undefined,
          (refused: RateLimiterRes) => refused,
        );
        if (limited) {
          const retryAfter = Math.max(1, Math.ceil(limited.msBeforeNext / 1000));
          const error = new AppError(
            'RATE_LIMITED',
            `Too many subscriptions started on this connection; try again in ${retryAfter} s`,
            [],
            retryAfter,
          );
          return [new GraphQLError(error.message, { originalError: error })];
        }
        if (full) {
          return [
            new GraphQLError(`At most ${WS_LIMITS.subscriptionsPerConnection} subscriptions per connection`, {
              extensions: { code: 'BAD_USER_INPUT' },
            }),
          ];
        }
        const ended = await sessionEnded(connection);
        if (ended) return [ended];
        // Every check on the document, the same as over HTTP (DocumentPolicy).
        const admitted = policy.admitSubscription({
          query: payload.query,
          documentId: (payload as { documentId?: unknown }).documentId,
          extensions: payload.extensions,
          operationName: payload.operationName,
          variables: payload.variables,
        });
        if ('errors' in admitted) return admitted.errors;
        const { document, operation } = admitted;
        tracing?.describeOperation(operation.operation, operation.name?.value ?? payload.operationName);
        const variables = payload.variables ?? {};
        const auth = connection.auth!;
        const contextValue: GraphQLContext = {
          services,
          loaders: new Loaders(services, auth),
          auth,
          selfIds: new Set(),
          clientIp: connection.ip,
          log: app.log,
          connection: {
            drop: (reason) => {
              app.log.info({ reason, trainerId: connection.trainerId }, 'WebSocket subscriber dropped');
              connection.socket.terminate();
            },
            track: (queue) => {
              if (connection.closed) void queue.return();
              else connection.queues.add(queue);
            },
            writable: () => whenWritable(connection),
          },
        };
        started = true;
        const args: ExecutionArgs = { schema, document, operationName: payload.operationName, variableValues: variables, contextValue };
        return args;
      } finally {
        // Refused before execution: graphql-ws calls no onComplete for it.
        if (!started) connection.subscriptions.delete(id);
      }
    },
    // The subscription has started: its subscribe message's span ends here, not with the subscription.
    ...(tracing ? { onOperation: () => void tracing.endMessage() } : {}),
    // Called when a started subscription's execution has ended, however it ended.
    onComplete: (ctx: WsContext, id) => {
      ctx.extra.connection.subscriptions.delete(id);
    },
    onError: (_ctx, _id, _payload, errors) => errors.map(formatLogged),
    onNext: (_ctx, _id, _payload, _args, result) => (result.errors ? { ...result, errors: result.errors.map(formatLogged) } : undefined),
  });

  wss.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    const ip = clientAddress(request);
    // The trace each message's span joins: the upgrade request's traceparent, if it sent one.
    const traceParent = tracing?.connectionContext(request.headers);
    const connection: Connection = {
      key: (connectionCount += 1),
      socket,
      ip,
      queues: new Set(),
      subscriptions: new Set(),
      closed: false,
    };
    connections.add(connection);
    perAddress.set(ip, (perAddress.get(ip) ?? 0) + 1);
    socket.on('error', () => socket.terminate());

    let answered = true;
    const ping = setInterval(() => {
      if (!answered) {
        socket.terminate();
        return;
      }
      answered = false;
      socket.ping();
    }, WS_LIMITS.pingMs);
    socket.on('pong', () => (answered = true));

    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: (data) => {
          if (socket.readyState !== socket.OPEN) return;
          // A reader that does not keep up is dropped, not buffered for.
          if (socket.bufferedAmount > WS_LIMITS.bufferedBytes) {
            socket.terminate();
            return;
          }
          socket.send(data);
        },
        close: (code, reason) => socket.close(code, reason),
        onMessage: (handle) =>
          socket.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
            const text = Array.isArray(data)
              ? Buffer.concat(data).toString('utf8')
              : Buffer.isBuffer(data)
                ? data.toString('utf8')
                : Buffer.from(new Uint8Array(data)).toString('utf8');
            const handled = tracing && traceParent ? tracing.wsMessage(traceParent, text, () => handle(text)) : handle(text);
            handled.catch((error: unknown) => {
              app.log.error({ err: toAppError(error) }, 'WebSocket message failed');
              close(connection, INTERNAL_ERROR, 'Internal server error');
            });
          }),
      },
      { connection },
    );
    socket.once('close', (code, reason) => {
      clearInterval(ping);
      clearTimeout(connection.expiry);
      connection.closed = true;
      for (const queue of connection.queues) void queue.return();
      connection.queues.clear();
      connections.delete(connection);
      const left = (perAddress.get(ip) ?? 1) - 1;
      if (left > 0) perAddress.set(ip, left);
      else perAddress.delete(ip);
      void closed(code, String(reason));
    });
  });

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node takes its own error listener off an upgraded socket: a reset must not become an uncaught exception.
    socket.on('error', () => socket.destroy());
    const path = (request.url ?? '').split('?')[0];
    if (request.headers.upgrade?.toLowerCase() !== 'websocket') return refuse(socket, 400, 'Only WebSocket upgrades are taken');
    if (path !== '/graphql') return refuse(socket, 404, 'Not Found');
    if (closing) return refuse(socket, 503, 'Service Unavailable');
    if (connections.size >= WS_LIMITS.connections) return refuse(socket, 503, 'Service Unavailable');
    const origin = request.headers.origin;
    if (origin !== undefined && config.corsOrigins.length > 0 && !config.corsOrigins.includes(origin)) {
      return refuse(socket, 403, 'Forbidden');
    }
    const ip = clientAddress(request);
    if ((perAddress.get(ip) ?? 0) >= WS_LIMITS.connectionsPerAddress) return refuse(socket, 429, 'Too Many Requests');
    wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
  };
  app.server.on('upgrade', onUpgrade);

  // A session that ends (logout, a refresh token replayed, here or on another instance) closes its sockets at once.
  const stopListening = services.sessionEndings.listen((ended) => {
    for (const connection of connections) {
      if (connection.trainerId === undefined || connection.sessionId === undefined) continue;
      if (isEnded(ended, connection.trainerId, connection.sessionId)) close(connection, UNAUTHORIZED, 'Session ended');
    }
  });

  // What no notice reached (a session ended while Redis was away, rows deleted by hand, a token
  // expiring past the longest timer): every open connection checked now and then, through the
  // merged caller read.
  let checking = false;
  const checkSessions = setInterval(() => {
    // While the database is slow, checks do not pile up.
    if (checking) return;
    const now = Date.now();
    for (const connection of connections) {
      if (connection.expiresAtMs !== undefined && connection.expiresAtMs <= now) close(connection, UNAUTHORIZED, 'Token expired');
    }
    const checked = [...connections].filter((c) => c.trainerId !== undefined && c.sessionId !== undefined);
    checking = true;
    void Promise.all(
      checked.map(async (connection) => {
        const caller = await services.trainers.findCaller(connection.trainerId!, connection.sessionId!).catch(() => undefined);
        // undefined: the database did not answer; the connection stays until it can tell.
        if (caller === null) close(connection, UNAUTHORIZED, 'Session ended');
      }),
    ).finally(() => (checking = false));
  }, sessionCheckMs);
  checkSessions.unref();

  app.addHook('preClose', async () => {
    closing = true;
    clearInterval(checkSessions);
    stopListening();
    app.server.off('upgrade', onUpgrade);
    for (const connection of connections) close(connection, GOING_AWAY, 'Going away');
    // A client that never answers the closing handshake is cut after a grace period (ws waits 30 s).
    const deadline = Date.now() + WS_LIMITS.closeGraceMs;
    while (connections.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    for (const connection of connections) connection.socket.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  });
}

import type { FastifyInstance } from 'fastify';
import type { ExecutionArgs, GraphQLSchema } from 'graphql';
import { handleProtocols, makeServer, type Context } from 'graphql-ws';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { Config } from '../config';
import { toAppError } from '../error-mapping';
import { clientAddressOf } from '../http/client-address';
import type { Services } from '../services';
import { createLiveFormat } from './format-error';
import type { Pipeline } from './pipeline';
import { GOING_AWAY, INTERNAL_ERROR, SocketConnection, WS_LIMITS } from './socket-connection';
import type { Tracing } from '../telemetry/spans';
import type { LiveConnections } from './live-connections';

export { WS_LIMITS } from './socket-connection';

type WsContext = Context<Record<string, unknown> | undefined, { connection: SocketConnection }>;

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
 * per socket) or a session that ends while the socket is open (LiveConnections: told at once,
 * from any instance; checked again at every subscribe, and now and then). An Origin outside
 * CORS_ORIGINS (when set) is refused, so is a 51st live-events connection from one address
 * (WebSockets and event streams together), a 21st live subscription on one connection, a subscription id
 * reused while its subscription lives (4409), a 31st subscribe message in 10 s and a message
 * over 64 KiB. What a subscribe's document may do (trusted documents, limits, validation,
 * variables, cost) is the pipeline's, as over HTTP (Pipeline.admitSubscription).
 * Sockets are pinged; a reader too slow to take its events is dropped rather than buffered for.
 * On close (SIGTERM) every socket gets 1001 after what was queued for it.
 */
export function registerSubscriptions(
  app: FastifyInstance,
  config: Config,
  services: Services,
  schema: GraphQLSchema,
  pipeline: Pick<Pipeline, 'admitSubscription'>,
  live: LiveConnections,
  { tracing }: { tracing?: Tracing } = {},
): void {
  const formatLogged = createLiveFormat(config, app.log);
  const clientAddress = clientAddressOf(config.trustProxy);
  let connectionCount = 0;
  const shared = { services, log: app.log, subscribes: new RateLimiterMemory({ points: WS_LIMITS.subscribesPer10s, duration: 10 }) };

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: WS_LIMITS.messageBytes,
    perMessageDeflate: false,
    handleProtocols: (protocols) => handleProtocols(protocols),
  });

  const server = makeServer<Record<string, unknown> | undefined, { connection: SocketConnection }>({
    schema,
    connectionInitWaitTimeout: WS_LIMITS.initWaitMs,
    onConnect: (ctx: WsContext) => ctx.extra.connection.open(ctx.connectionParams?.authorization),
    onSubscribe: async (ctx: WsContext, id, payload) => {
      const { connection } = ctx.extra;
      const refused = await connection.admit(id);
      if (refused) return refused;
      let started = false;
      try {
        // Every check on the document, the same as over HTTP (the Pipeline).
        const admitted = pipeline.admitSubscription({
          query: payload.query,
          documentId: (payload as { documentId?: unknown }).documentId,
          extensions: payload.extensions,
          operationName: payload.operationName,
          variables: payload.variables,
        });
        if ('errors' in admitted) return admitted.errors;
        const { document, operation } = admitted;
        tracing?.describeOperation(operation.operation, operation.name?.value ?? payload.operationName);
        const contextValue = connection.contextFor(app.log);
        started = true;
        const args: ExecutionArgs = {
          schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables ?? {},
          contextValue,
        };
        return args;
      } finally {
        // Refused before execution: graphql-ws calls no onComplete for it.
        if (!started) connection.release(id);
      }
    },
    // The subscription has started: its subscribe message's span ends here, not with the subscription.
    ...(tracing ? { onOperation: () => void tracing.endMessage() } : {}),
    // Called when a started subscription's execution has ended, however it ended.
    onComplete: (ctx: WsContext, id) => ctx.extra.connection.release(id),
    onError: (_ctx, _id, _payload, errors) => errors.map(formatLogged),
    onNext: (_ctx, _id, _payload, _args, result) => (result.errors ? { ...result, errors: result.errors.map(formatLogged) } : undefined),
  });

  wss.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    const ip = clientAddress(request);
    // The trace each message's span joins: the upgrade request's traceparent, if it sent one.
    const traceParent = tracing?.connectionContext(request.headers);
    const connection = new SocketConnection(socket, ip, (connectionCount += 1), shared);
    live.add(connection);

    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: (data) => connection.send(data),
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
              connection.close(INTERNAL_ERROR, 'Internal server error');
            });
          }),
      },
      { connection },
    );
    socket.once('close', (code, reason) => {
      live.remove(connection);
      void closed(code, String(reason));
    });
  });

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node takes its own error listener off an upgraded socket: a reset must not become an uncaught exception.
    socket.on('error', () => socket.destroy());
    const path = (request.url ?? '').split('?')[0];
    if (request.headers.upgrade?.toLowerCase() !== 'websocket') return refuse(socket, 400, 'Only WebSocket upgrades are taken');
    if (path !== '/graphql') return refuse(socket, 404, 'Not Found');
    const refused = live.refusal(clientAddress(request), request.headers.origin);
    if (refused) return refuse(socket, refused, STATUS_CODES[refused]!);
    wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
  };
  app.server.on('upgrade', onUpgrade);

  app.addHook('preClose', async () => {
    live.stop();
    app.server.off('upgrade', onUpgrade);
    for (const connection of live.of(SocketConnection)) connection.close(GOING_AWAY, 'Going away');
    // A client that never answers the closing handshake is cut after a grace period (ws waits 30 s).
    const deadline = Date.now() + WS_LIMITS.closeGraceMs;
    while (live.of(SocketConnection).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    for (const connection of live.of(SocketConnection)) connection.socket.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  });
}

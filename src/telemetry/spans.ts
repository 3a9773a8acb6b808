import { suppressTracing } from '@opentelemetry/core';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import type { FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * The app's own spans, on OpenTelemetry's API (a no-op until the SDK of sdk.ts is registered).
 * Only loaded when tracing is on (app.ts): with it off, none of this runs or is even required.
 *
 * Attributes name routes, operations and message types, never values: no variables, no query
 * text (it may hold literals), no ids from paths, no error messages (they may quote a row).
 */
export class Tracing {
  private readonly tracer = trace.getTracer('creature-registry');

  /**
   * Fastify onRequest (every route): names the request's span by its route's template
   * (`GET /trainer/:id`) and puts the template in place of the path, whose ids are values.
   */
  readonly nameRequestSpan = async (request: FastifyRequest): Promise<void> => {
    const span = trace.getActiveSpan();
    if (!span) return;
    const route = request.routeOptions.url ?? 'unmatched';
    span.updateName(`${request.method} ${route}`);
    span.setAttribute('http.route', route);
    span.setAttribute('http.target', route);
    span.setAttribute('url.path', route);
    span.setAttribute('http.url', route);
  };

  /**
   * A span around one GraphQL operation's execution, on every route (graphql-js or a
   * compiled plan): its type and name only. A result with errors marks it failed.
   */
  operation<T extends { errors?: readonly unknown[] }>(type: string, name: string | null | undefined, run: () => Promise<T>): Promise<T> {
    const attributes = operationAttributes(type, name);
    const spanName = attributes['graphql.operation.name'] ? `${type} ${attributes['graphql.operation.name']}` : type;
    return this.tracer.startActiveSpan(spanName, { attributes }, async (span) => {
      try {
        const result = await run();
        if (result.errors?.length) span.setStatus({ code: SpanStatusCode.ERROR });
        return result;
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    });
  }

  /**
   * A span per SQL statement the app runs itself (SQLite): the statement's text, whose values are
   * all `?` placeholders, never the values.
   */
  statement<T>(system: string, sql: string, run: () => Promise<T>): Promise<T> {
    const operation = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? 'SQL';
    const attributes = { 'db.system.name': system, 'db.operation.name': operation, 'db.query.text': sql };
    return this.tracer.startActiveSpan(operation, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      try {
        return await run();
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    });
  }

  /** Runs `work` (and what it starts) without spans: the service's own background chores. */
  untraced<T>(work: () => T): T {
    return context.with(suppressTracing(context.active()), work);
  }

  /** The trace a WebSocket connection continues: the traceparent of its upgrade request, if any. */
  connectionContext(headers: IncomingHttpHeaders): Context {
    return propagation.extract(ROOT_CONTEXT, headers);
  }

  /**
   * A span per WebSocket message (`graphql-ws subscribe`, `graphql-ws connection_init`...). A
   * subscribe message's handling lasts as long as its subscription: its span ends when the
   * subscription has started (endMessage), or when it was refused.
   */
  wsMessage(parent: Context, text: string, handle: () => Promise<void>): Promise<void> {
    return this.tracer.startActiveSpan(`graphql-ws ${messageType(text)}`, { kind: SpanKind.SERVER }, parent, (span) =>
      handle().finally(() => span.end()),
    );
  }

  /** Names the operation of the message being handled (its span is the active one). */
  describeOperation(type: string, name: string | null | undefined): void {
    trace.getActiveSpan()?.setAttributes(operationAttributes(type, name));
  }

  /** Ends the active WebSocket message's span: its subscription has started. */
  endMessage(): void {
    trace.getActiveSpan()?.end();
  }
}

const MESSAGE_TYPES = new Set(['connection_init', 'ping', 'pong', 'subscribe', 'complete']);

/** The message's protocol type (one of graphql-transport-ws's), or `invalid`. */
function messageType(text: string): string {
  try {
    const type = (JSON.parse(text) as { type?: unknown } | null)?.type;
    return typeof type === 'string' && MESSAGE_TYPES.has(type) ? type : 'invalid';
  } catch {
    return 'invalid';
  }
}

const OPERATION_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

function operationAttributes(type: string, name: string | null | undefined): Record<string, string> {
  return {
    'graphql.operation.type': type,
    ...(name && OPERATION_NAME.test(name) ? { 'graphql.operation.name': name } : {}),
  };
}

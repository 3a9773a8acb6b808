import type { IncomingMessage } from 'node:http';
import type { Span } from '@opentelemetry/api';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { MySQL2Instrumentation } from '@opentelemetry/instrumentation-mysql2';
import { PinoInstrumentation } from '@opentelemetry/instrumentation-pino';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { Telemetry } from './telemetry';

/** Requests of the operations endpoints (load balancers and scrapers call them every few seconds) get no span. */
const UNTRACED = new Set(['/healthz', '/readyz', '/metrics']);

const pathOf = (url: string | undefined): string => (url ?? '/').split('?', 1)[0];

/**
 * The request's URL without the values of its query string: a GraphQL GET carries its query and
 * variables there, and REST filters their values. The parameters' names stay. The route's
 * template replaces the path once the router has matched it (see spans.ts).
 */
function withoutQueryValues(span: Span, request: IncomingMessage): void {
  const [path, query] = (request.url ?? '/').split('?', 2);
  span.setAttribute('http.target', path);
  span.setAttribute('url.path', path);
  span.setAttribute('http.url', `http://${request.headers.host ?? 'localhost'}${path}`);
  if (query === undefined) return;
  const names = [...new URLSearchParams(query).keys()].map((name) => `${name}=REDACTED`).join('&');
  span.setAttribute('url.query', names);
}

export function protocolOf(env: Record<string, string | undefined>): 'http/json' | 'http/protobuf' {
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf';
  if (protocol !== 'http/json' && protocol !== 'http/protobuf') {
    throw new Error(`Invalid configuration: OTEL_EXPORTER_OTLP_PROTOCOL must be http/json or http/protobuf, not "${protocol}"`);
  }
  return protocol;
}

/**
 * Traces over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (the exporters add /v1/traces and read
 * the other OTEL_EXPORTER_OTLP_* settings themselves), in JSON or protobuf. Spans: each HTTP
 * request (continuing an incoming W3C traceparent), each SQL
 * statement on MySQL (its text with placeholders, never the values), each Redis command (its
 * name only); the app adds GraphQL operations and WebSocket messages (spans.ts). Log lines
 * written inside a span carry its trace_id and span_id.
 */
export function startTracing(env: Record<string, string | undefined>): Telemetry {
  let protocol;
  try {
    protocol = protocolOf(env);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exit(1);
  }
  const exporter = protocol === 'http/json' ? new JsonExporter() : new ProtobufExporter();
  const provider = new NodeTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME ?? 'creature-registry' })),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  // The W3C trace context propagator and an AsyncLocalStorage context manager.
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => UNTRACED.has(pathOf(request.url)),
        // The only outgoing requests are the exporter's own.
        disableOutgoingRequestInstrumentation: true,
        requestHook: (span, request) => {
          if (!('setHeader' in request)) withoutQueryValues(span, request);
        },
      }),
      // No instrumentation of graphql-js: most operations never reach its execute (graphql-jit
      // runs them), so the service makes each operation's span itself (spans.ts); and its
      // validate span records the validation errors' messages, which quote the document's
      // literal values (`String cannot represent a non string value: 123`).
      // The statement's text with its placeholders: without maskStatement, mysql2's instrumentation writes the values into it.
      new MySQL2Instrumentation({ maskStatement: true }),
      // The command's name only: keys name accounts and addresses (login counters), values carry events.
      new IORedisInstrumentation({ dbStatementSerializer: (command) => command }),
      // trace_id and span_id in log lines; the lines themselves stay on stdout.
      new PinoInstrumentation({ disableLogSending: true }),
    ],
  });
  return { shutdown: () => provider.shutdown() };
}

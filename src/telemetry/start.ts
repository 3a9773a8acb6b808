/**
 * Imported by main.ts before anything else of the app: OpenTelemetry's instrumentations patch
 * modules (http, graphql, mysql2, ioredis, pino) as they are first required, so the SDK must be
 * running before the app loads them. Without OTEL_EXPORTER_OTLP_ENDPOINT (or its traces-only
 * form) nothing of OpenTelemetry is loaded at all: off costs nothing.
 */

import type { Telemetry } from './telemetry';

const OFF: Telemetry = { shutdown: async () => undefined };

function tracingEnabled(env: Record<string, string | undefined>): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

function start(): Telemetry {
  if (!tracingEnabled(process.env)) return OFF;
  // require, not import: the SDK is loaded only when asked for.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startTracing } = require('./sdk') as typeof import('./sdk');
  return startTracing(process.env);
}

export const telemetry = start();

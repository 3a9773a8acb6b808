/**
 * What the process holds of tracing (start.ts): the SDK's (sdk.ts) or nothing. Its own file, so
 * that start.ts and sdk.ts do not import each other.
 */
export interface Telemetry {
  /** Exports the spans still buffered; called before the process exits. */
  shutdown(): Promise<void>;
}

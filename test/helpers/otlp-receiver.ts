import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/**
 * A local OTLP/HTTP trace receiver for tests: collects what exporters POST to /v1/traces, in
 * JSON (`application/json`) or protobuf (`application/x-protobuf`), decoded into plain spans.
 * No collector is needed: the protobuf messages are read field by field with the numbers of
 * opentelemetry-proto's trace.proto (only the fields the tests look at).
 */

export type AttributeValue = string | number | boolean | null | AttributeValue[] | { [key: string]: AttributeValue };

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, AttributeValue>;
  events: { name: string; attributes: Record<string, AttributeValue> }[];
  status: { code: number; message: string };
  resource: Record<string, AttributeValue>;
  scope: string;
}

export interface OtlpReceiver {
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** The content types of the requests received (`application/json`, `application/x-protobuf`). */
  readonly contentTypes: Set<string>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes = new Set<string>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      let body = Buffer.concat(chunks);
      if (request.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const type = (request.headers['content-type'] ?? '').split(';', 1)[0].trim();
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      contentTypes.add(type);
      if (type === 'application/json') {
        spans.push(...fromJson(JSON.parse(body.toString('utf8')) as JsonRequest));
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        spans.push(...fromProtobuf(body));
        response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    contentTypes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// ---------------------------------------------------------------- JSON

interface JsonAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  bytesValue?: string;
  arrayValue?: { values?: JsonAnyValue[] };
  kvlistValue?: { values?: JsonKeyValue[] };
}
interface JsonKeyValue {
  key: string;
  value?: JsonAnyValue;
}
interface JsonRequest {
  resourceSpans?: {
    resource?: { attributes?: JsonKeyValue[] };
    scopeSpans?: {
      scope?: { name?: string };
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        attributes?: JsonKeyValue[];
        events?: { name: string; attributes?: JsonKeyValue[] }[];
        status?: { code?: number; message?: string };
      }[];
    }[];
  }[];
}

function jsonValue(value: JsonAnyValue | undefined): AttributeValue {
  if (!value) return null;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.bytesValue !== undefined) return value.bytesValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(jsonValue);
  if (value.kvlistValue) return jsonAttributes(value.kvlistValue.values);
  return null;
}

const jsonAttributes = (list: JsonKeyValue[] | undefined): Record<string, AttributeValue> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));

function fromJson(request: JsonRequest): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs) =>
    (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        name: span.name,
        kind: span.kind ?? 0,
        attributes: jsonAttributes(span.attributes),
        events: (span.events ?? []).map((event) => ({ name: event.name, attributes: jsonAttributes(event.attributes) })),
        status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
        resource: jsonAttributes(rs.resource?.attributes),
        scope: ss.scope?.name ?? '',
      })),
    ),
  );
}

// ---------------------------------------------------------------- protobuf

type Field = { number: number; varint?: bigint; bytes?: Buffer; fixed?: Buffer };

/** The fields of one protobuf message, in order (repeated fields appear once per value). */
function fields(buffer: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buffer[at++];
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (at < buffer.length) {
    const key = Number(varint());
    const number = key >>> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ number, varint: varint() });
    else if (wire === 1) {
      out.push({ number, fixed: buffer.subarray(at, at + 8) });
      at += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      out.push({ number, bytes: buffer.subarray(at, at + length) });
      at += length;
    } else if (wire === 5) {
      out.push({ number, fixed: buffer.subarray(at, at + 4) });
      at += 4;
    } else throw new Error(`protobuf wire type ${wire} not expected in OTLP traces`);
  }
  return out;
}

const all = (list: Field[], number: number): Buffer[] => list.filter((f) => f.number === number).map((f) => f.bytes!);
const one = (list: Field[], number: number): Field | undefined => list.find((f) => f.number === number);
const text = (list: Field[], number: number): string => one(list, number)?.bytes?.toString('utf8') ?? '';
const hex = (list: Field[], number: number): string => one(list, number)?.bytes?.toString('hex') ?? '';

/** AnyValue: string 1, bool 2, int 3, double 4, array 5, kvlist 6, bytes 7. */
function protoValue(buffer: Buffer | undefined): AttributeValue {
  if (!buffer) return null;
  const [field] = fields(buffer);
  if (!field) return null;
  switch (field.number) {
    case 1:
      return field.bytes!.toString('utf8');
    case 2:
      return field.varint === 1n;
    case 3:
      return Number(BigInt.asIntN(64, field.varint!));
    case 4:
      return field.fixed!.readDoubleLE(0);
    case 5:
      return all(fields(field.bytes!), 1).map(protoValue);
    case 6:
      return protoAttributes(all(fields(field.bytes!), 1));
    case 7:
      return field.bytes!.toString('base64');
    default:
      return null;
  }
}

/** KeyValue: key 1, value 2. */
const protoAttributes = (list: Buffer[]): Record<string, AttributeValue> =>
  Object.fromEntries(
    list.map((kv) => {
      const f = fields(kv);
      return [text(f, 1), protoValue(one(f, 2)?.bytes)];
    }),
  );

/**
 * ExportTraceServiceRequest: resource_spans 1. ResourceSpans: resource 1 (attributes 1),
 * scope_spans 2. ScopeSpans: scope 1 (name 1), spans 2. Span: trace_id 1, span_id 2,
 * parent_span_id 4, name 5, kind 6, attributes 9, events 11 (name 2, attributes 3), status 15
 * (message 2, code 3).
 */
function fromProtobuf(body: Buffer): ReceivedSpan[] {
  return all(fields(body), 1).flatMap((rsBytes) => {
    const rs = fields(rsBytes);
    const resourceBytes = one(rs, 1)?.bytes;
    const resource = resourceBytes ? protoAttributes(all(fields(resourceBytes), 1)) : {};
    return all(rs, 2).flatMap((ssBytes) => {
      const ss = fields(ssBytes);
      const scopeBytes = one(ss, 1)?.bytes;
      const scope = scopeBytes ? text(fields(scopeBytes), 1) : '';
      return all(ss, 2).map((spanBytes) => {
        const span = fields(spanBytes);
        const status = one(span, 15)?.bytes;
        const statusFields = status ? fields(status) : [];
        return {
          traceId: hex(span, 1),
          spanId: hex(span, 2),
          parentSpanId: hex(span, 4),
          name: text(span, 5),
          kind: Number(one(span, 6)?.varint ?? 0n),
          attributes: protoAttributes(all(span, 9)),
          events: all(span, 11).map((eventBytes) => {
            const event = fields(eventBytes);
            return { name: text(event, 2), attributes: protoAttributes(all(event, 3)) };
          }),
          status: { code: Number(one(statusFields, 3)?.varint ?? 0n), message: text(statusFields, 2) },
          resource,
          scope,
        };
      });
    });
  });
}

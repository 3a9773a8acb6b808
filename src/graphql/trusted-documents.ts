import { createHash, timingSafeEqual } from 'node:crypto';
import { InMemoryLRUCache, type KeyValueCache } from '@apollo/utils.keyvaluecache';
import type { GraphQLRequest } from '@apollo/server';
import { getOperationAST, GraphQLError, OperationTypeNode, type GraphQLSchema } from 'graphql';
import { ConfigError, type TrustedDocumentsManifest } from '../config';
import { graphqlError } from './format-error';
import type { DocumentEntry, TextVerdict } from './document-cache';
import { compile } from './plans';
import type { Metrics } from '../ops/metrics';

/** A document of the TRUSTED_DOCUMENTS manifest: parsed, validated and compiled once, at start. */
export interface TrustedDocument {
  /** The SHA-256 of its text, in lowercase hex. */
  readonly id: string;
  readonly source: string;
  /**
   * Its entry in the pipeline's cache, never evicted: its document, and its plan when graphql-jit
   * answers it as graphql-js does (plans.ts' compilable) and it is not a subscription.
   */
  readonly entry: DocumentEntry;
}

/** How a request names its document: by text (`query`), by `documentId`, or by Apollo's APQ extension. */
export interface DocumentRequest {
  readonly query?: unknown;
  readonly documentId?: unknown;
  readonly extensions?: unknown;
}

/**
 * What the gate decides about a request's document:
 * - `trusted`: a manifest document, named by id or by its identical text; it runs as parsed,
 *   validated and compiled at start;
 * - `open`: not a trusted document, and this server runs others (development, or no manifest):
 *   the route goes on as before (parse, limits, validation; Apollo's own APQ);
 * - `refused`: PERSISTED_QUERY_NOT_FOUND, decided before anything parses the text.
 */
export type Admission =
  | { readonly kind: 'trusted'; readonly document: TrustedDocument }
  | { readonly kind: 'open' }
  | { readonly kind: 'refused'; readonly error: GraphQLError };

const HASH = /^(?:sha256:)?([0-9a-fA-F]{64})$/;

/** The id as the manifest keys it (lowercase hex), from `sha256:<hex>` or `<hex>`; undefined when it is no SHA-256. */
export function normalizedId(id: unknown): string | undefined {
  return typeof id === 'string' ? HASH.exec(id)?.[1]?.toLowerCase() : undefined;
}

function apqHash(extensions: unknown): unknown {
  if (typeof extensions !== 'object' || extensions === null) return undefined;
  const persisted: unknown = (extensions as { persistedQuery?: unknown }).persistedQuery;
  return typeof persisted === 'object' && persisted !== null ? (persisted as { sha256Hash?: unknown }).sha256Hash : undefined;
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/** APQ registrations kept when there is no manifest: bounded, as Apollo's own default cache is. */
const APQ_CACHE_BYTES = 16 * 2 ** 20;

/** HTTP 200, as APQ clients expect (the catalogue's 404 is REST's). */
const notFound = (message: string) => graphqlError('PERSISTED_QUERY_NOT_FOUND', message, { status: 200 });
const UNKNOWN_ID = 'PersistedQueryNotFound: no document with this id is known here';
const NOT_TRUSTED =
  'PersistedQueryNotFound: only the trusted documents of this server run here (TRUSTED_DOCUMENTS); send one by its documentId or its exact text';

/**
 * The rule on which GraphQL documents run, asked by the Pipeline (and nothing else) before
 * anything parses a request's text, on every route a document can take: Apollo over HTTP (POST
 * and GET, through `admitHttp`) and graphql-ws subscriptions (`admit`).
 *
 * With TRUSTED_DOCUMENTS, the manifest's documents are checked by the pipeline (text checks,
 * parse, validation with the request limits) and compiled here once, at start (a document that
 * breaks a check stops start-up, named by its hash). A request names one by `documentId`
 * (`sha256:<hex>` or `<hex>`), by Apollo's APQ extension or by its identical text, and runs
 * without being parsed, validated or compiled again: their entries (`entries`) head the
 * pipeline's cache, which is Apollo's document store. In production any other
 * document is refused with PERSISTED_QUERY_NOT_FOUND before it is parsed; in development it runs
 * as before. With a manifest, APQ cannot add documents; without one, APQ registers them as
 * Apollo does (`apqCache`), and a `documentId` names no document.
 */
export class TrustedDocuments {
  private readonly byId = new Map<string, TrustedDocument>();
  private readonly bySource = new Map<string, TrustedDocument>();
  private readonly registered = new InMemoryLRUCache<string>({ maxSize: APQ_CACHE_BYTES, sizeCalculation: (text) => 2 * text.length });
  /** Only the manifest's documents run (production with a manifest), except those the router sends. */
  private readonly enforce: boolean;
  /** The SHA-256 of FEDERATION_ROUTER_SECRET, compared in constant time with that of what a request sends. */
  private readonly routerDigest: Buffer | undefined;

  /** Whether a request's `router-secret` header is the router's secret. */
  private routerSent(secret: string | undefined): boolean {
    return this.routerDigest !== undefined && secret !== undefined && timingSafeEqual(digest(secret), this.routerDigest);
  }

  /**
   * @param check the pipeline's text checks, parse and validation of a document.
   * @throws ConfigError naming the manifest and the document's hash when a document breaks a check.
   */
  constructor(
    schema: GraphQLSchema,
    private readonly manifest: TrustedDocumentsManifest | undefined,
    {
      isProduction,
      check,
      routerSecret,
    }: {
      isProduction: boolean;
      check: (source: string) => TextVerdict;
      /** FEDERATION_ROUTER_SECRET: what the router sends in `router-secret`. */
      routerSecret?: string;
    },
    /** Counts how documents came in (graphql_documents_total). */
    private readonly metrics: Pick<Metrics, 'documents'>,
  ) {
    this.enforce = isProduction && manifest !== undefined;
    this.routerDigest = routerSecret === undefined ? undefined : digest(routerSecret);
    for (const [id, source] of manifest?.documents ?? []) {
      const trusted = this.prepare(schema, id, source, check);
      this.byId.set(id, trusted);
      this.bySource.set(source, trusted);
    }
  }

  private prepare(schema: GraphQLSchema, id: string, source: string, check: (source: string) => TextVerdict): TrustedDocument {
    const refuse = (reason: string) =>
      new ConfigError(`Invalid configuration: TRUSTED_DOCUMENTS ${this.manifest?.file} document ${id} ${reason.slice(0, 500)}`);
    const checked = check(source);
    if ('errors' in checked) {
      // graphql-armor's limit messages come as "Syntax Error: ...", which they are not.
      const reasons = checked.errors.map((error) => error.message.replace(/^Syntax Error: /, '')).join('; ');
      if (checked.step === 'text') throw refuse(`breaks a request limit: ${reasons}`);
      if (checked.step === 'parse') throw refuse(`does not parse: ${reasons}`);
      throw refuse(`does not validate against the schema: ${reasons}`);
    }
    const operation = getOperationAST(checked.document);
    const plan = operation && operation.operation !== OperationTypeNode.SUBSCRIPTION ? compile(schema, checked.document) : undefined;
    return Object.freeze({ id, source, entry: { verdict: checked, uses: 0, plan: plan ?? null } });
  }

  /**
   * The rule itself: which document a request runs, or why it is refused; never parses.
   * `fromRouter`: the request carries the router's secret (routerSent), so a document it
   * planned runs as in development: checked, parsed and validated like any other.
   */
  admit(request: DocumentRequest, fromRouter = false): Admission {
    const enforce = this.enforce && !fromRouter;
    const query = typeof request.query === 'string' && request.query !== '' ? request.query : undefined;
    const byDocumentId = request.documentId !== undefined && request.documentId !== null;
    const id = byDocumentId ? request.documentId : apqHash(request.extensions);
    if (id !== undefined && id !== null) {
      const hash = normalizedId(id);
      const trusted = hash === undefined ? undefined : this.byId.get(hash);
      if (trusted && (query === undefined || query === trusted.source)) {
        this.metrics.documents.inc({ how: 'id' });
        return { kind: 'trusted', document: trusted };
      }
      // A documentId names a manifest document or nothing. An APQ hash that is not in the
      // manifest is Apollo's to look up or register when there is no manifest; with one, only
      // a text sent along may still run (in development), and it is not registered (apqCache).
      if (byDocumentId || (this.manifest && (query === undefined || enforce))) return this.refuse(UNKNOWN_ID);
      return { kind: 'open' };
    }
    if (query !== undefined) {
      const trusted = this.bySource.get(query);
      if (trusted) {
        this.metrics.documents.inc({ how: 'text' });
        return { kind: 'trusted', document: trusted };
      }
      if (enforce) return this.refuse(NOT_TRUSTED);
    }
    // No document at all (or not a string): the route answers it as it always has (BAD_USER_INPUT).
    return { kind: 'open' };
  }

  private refuse(message: string): Admission {
    this.metrics.documents.inc({ how: 'refused' });
    return { kind: 'refused', error: notFound(message) };
  }

  /** The manifest's documents as entries of the pipeline's cache, by their id (their text's SHA-256). */
  entries(): ReadonlyMap<string, DocumentEntry> {
    return new Map([...this.byId].map(([id, trusted]) => [id, trusted.entry]));
  }

  /** Apollo's APQ cache: registrations are kept only when there is no manifest. */
  apqCache(): KeyValueCache<string> {
    return {
      get: async (key) => (this.manifest ? undefined : this.registered.get(key)),
      set: async (key, value, options) => {
        if (!this.manifest) await this.registered.set(key, value, options);
      },
      delete: async (key) => this.registered.delete(key),
    };
  }

  /**
   * The gate for a request Apollo has taken over HTTP, asked before Apollo reads its text: the
   * refusal (PERSISTED_QUERY_NOT_FOUND), or undefined to go on. A trusted document named by id
   * (`documentId` in the body or the query string, or APQ's hash) goes on as its text, without
   * the APQ extension, so that Apollo looks it up in its document store and registers nothing.
   */
  admitHttp(request: GraphQLRequest): GraphQLError | undefined {
    const { http } = request;
    const documentId =
      http?.method === 'GET'
        ? (new URLSearchParams(http.search).get('documentId') ?? undefined)
        : typeof http?.body === 'object' && http.body !== null
          ? (http.body as { documentId?: unknown }).documentId
          : undefined;
    const admission = this.admit(
      { query: request.query, documentId, extensions: request.extensions },
      this.routerSent(http?.headers.get('router-secret')),
    );
    if (admission.kind === 'refused') return admission.error;
    if (admission.kind !== 'trusted') return undefined;
    if (request.query === admission.document.source && documentId === undefined && apqHash(request.extensions) === undefined)
      return undefined;
    request.query = admission.document.source;
    request.extensions = withoutPersistedQuery(request.extensions);
    return undefined;
  }
}

function withoutPersistedQuery(extensions: unknown): Record<string, unknown> | undefined {
  if (typeof extensions !== 'object' || extensions === null || Array.isArray(extensions)) return undefined;
  const { persistedQuery: _persisted, ...rest } = extensions as Record<string, unknown>;
  return Object.keys(rest).length > 0 ? rest : undefined;
}

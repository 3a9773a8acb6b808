import { createHash } from 'node:crypto';
import type { KeyValueCache } from '@apollo/utils.keyvaluecache';
import { parse, type DocumentNode, type GraphQLError } from 'graphql';
import type { CompiledQuery } from 'graphql-jit';
import { LRUCache } from 'lru-cache';

/** A text's verdict: its parsed and validated document, or the step that refused it and why. */
export type TextVerdict =
  { readonly document: DocumentNode } | { readonly step: 'text' | 'parse' | 'validate'; readonly errors: readonly GraphQLError[] };

/**
 * What is known about one document text: its verdict, how often it has run, and its plan once
 * graphql-jit compiled one (`null`: it never will be; see plans.ts). One entry per text, whichever
 * door the text came through (Apollo's document store over HTTP, the WebSocket door).
 */
export interface DocumentEntry {
  readonly verdict: TextVerdict;
  uses: number;
  plan: CompiledQuery | null | undefined;
}

/** The SHA-256 of a text in lowercase hex: Apollo's query hash, a trusted document's id, and this cache's key. */
export const hashOf = (source: string): string => createHash('sha256').update(source).digest('hex');

/**
 * Apollo's keys for its document store end with the text's SHA-256 (after a prefix of its own,
 * the schema's hash); a key of another shape only misses.
 */
const hashOfKey = (key: string): string => key.slice(-64);

/**
 * What Apollo is handed in place of a text refused before parsing: a one-field query, parsed
 * here once, never run (the pipeline's plugin answers the refusal once Apollo resolved it). A text
 * refused by its own checks maps to this document in Apollo's store; a request refused before
 * Apollo read its text (the trusted-documents gate, the length) is given this text.
 */
export const STAND_IN = '{ __typename }';
const standIn = parse(STAND_IN);

/** Bytes the cache may hold, as sized below; a compiled plan (generated JavaScript) counts PLAN_BYTES more. */
const MAX_BYTES = 32 * 2 ** 20;
const PLAN_BYTES = 64 * 2 ** 10;

/**
 * An entry sized by what it really holds: a parsed node keeps a reference to the whole text, so
 * distinct long texts (one token and a long comment each) weigh their text, not their few nodes.
 */
function sizeOf(entry: DocumentEntry): number {
  const { verdict } = entry;
  // A refusal's errors point at the text through their nodes, as a document's nodes do.
  const source = 'document' in verdict ? verdict.document.loc?.source : verdict.errors[0]?.nodes?.[0]?.loc?.source;
  const nodes = 'document' in verdict ? JSON.stringify(verdict.document).length : 256 * verdict.errors.length;
  return Math.max(1, nodes + 2 * (source?.body.length ?? 0) + (entry.plan ? PLAN_BYTES : 0));
}

/**
 * The one cache of documents, keyed by their text's hash: the trusted documents' entries
 * (parsed, validated and compiled at start, never evicted) and the stand-in's, then the others, least recently used
 * out first within MAX_BYTES. Apollo's document store is a view of it (`apolloStore`).
 */
export class DocumentCache {
  private readonly entries = new LRUCache<string, DocumentEntry>({ maxSize: MAX_BYTES, sizeCalculation: sizeOf });

  private readonly pinned: ReadonlyMap<string, DocumentEntry>;

  /** @param pinned entries never evicted (the trusted documents'); the stand-in's is one of them. */
  constructor(pinned: ReadonlyMap<string, DocumentEntry> = new Map()) {
    this.pinned = new Map([...pinned, [hashOf(STAND_IN), { verdict: { document: standIn }, uses: 0, plan: null }]]);
  }

  get(hash: string): DocumentEntry | undefined {
    return this.pinned.get(hash) ?? this.entries.get(hash);
  }

  /** Records a text's verdict (a pinned entry stays as it is); the entry. */
  remember(hash: string, verdict: TextVerdict): DocumentEntry {
    const known = this.pinned.get(hash);
    if (known) return known;
    const entry: DocumentEntry = { verdict, uses: 0, plan: undefined };
    this.entries.set(hash, entry);
    return entry;
  }

  /** A plan was compiled (or refused) for an entry: it is weighed again. */
  planned(hash: string, entry: DocumentEntry): void {
    if (!this.pinned.has(hash) && this.entries.peek(hash) === entry) this.entries.set(hash, entry);
  }

  /**
   * Apollo's document store: Apollo asks it before parsing a text and, once it has parsed and
   * validated one with the pipeline's rules, records the document here. A text refused by its
   * text checks is the stand-in document, so that Apollo does not parse it.
   */
  apolloStore(): KeyValueCache<DocumentNode> {
    return {
      get: async (key) => {
        const verdict = this.get(hashOfKey(key))?.verdict;
        if (!verdict) return undefined;
        if ('document' in verdict) return verdict.document;
        return verdict.step === 'text' ? standIn : undefined;
      },
      set: async (key, document) => void this.remember(hashOfKey(key), { document }),
      delete: async (key) => void this.entries.delete(hashOfKey(key)),
    };
  }
}

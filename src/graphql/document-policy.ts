import type { ApolloServerPlugin, GraphQLRequestListener } from '@apollo/server';
import type { KeyValueCache } from '@apollo/utils.keyvaluecache';
import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import {
  getNamedType,
  getOperationAST,
  getVariableValues,
  GraphQLError,
  isIntrospectionType,
  OperationTypeNode,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
  type VariableDefinitionNode,
} from 'graphql';
import type { CompiledQuery } from 'graphql-jit';
import type { TrustedDocumentsManifest } from '../config';
import { MAX_JSON_DEPTH } from '../http/json-body';
import { costChecker, LIMITS, limitRules, MAX_VERDICTS, repeatedSelections } from './limits';
import { TrustedDocuments, type DocumentRequest } from './trusted-documents';
import { Metrics } from '../ops/metrics';

/** How a document reached the server: HTTP (Apollo, any method and route) or graphql-ws. */
export type Transport = 'http' | 'ws';

/** An operation as the checks see it: resolved from its document, with the request's variables. */
export interface CheckedOperation {
  readonly document: DocumentNode;
  readonly operation: OperationDefinitionNode;
  readonly variables: Record<string, unknown>;
}

/**
 * A check added to the policy (BuildOptions.documentChecks): asked of every operation on every
 * route, after the built-in operation checks; the error it returns refuses the operation (over
 * HTTP with its `extensions.http.status`; Apollo answers 500 without one).
 */
export type DocumentCheck = (operation: CheckedOperation) => GraphQLError | undefined;

/** What a graphql-ws subscribe runs once the policy has admitted it. */
export interface AdmittedSubscription {
  readonly document: DocumentNode;
  readonly operation: OperationDefinitionNode;
}

/** An operation the policy admitted, with its variables coerced to their types. */
export interface AdmittedOperation {
  readonly operation: OperationDefinitionNode;
  readonly coerced: Record<string, unknown>;
}

/** A text checked, parsed and validated; when refused, the step that refused it. */
export type TextVerdict =
  { readonly document: DocumentNode } | { readonly step: 'text' | 'parse' | 'validate'; readonly errors: readonly GraphQLError[] };

/** Only texts up to this many characters are remembered: MAX_VERDICTS of them stay within 4 MB. */
const MAX_REMEMBERED_QUERY = 4096;
/** Parsed and validated documents remembered (a reconnecting client sends the same ones again). */
const MAX_REMEMBERED_DOCUMENTS = 200;

const badUserInput = (message: string) => new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } });

/**
 * Apollo's own rule for `introspection: false` tells clients to "pass introspection: true to
 * ApolloServer"; this one names the setting of this service.
 */
const noIntrospection: ValidationRule = (context) => ({
  Field(node) {
    const type = context.getType();
    const parent = context.getParentType();
    // Reported once, where the introspection starts (`__schema`, `__type`), not on each field inside it.
    if (type && isIntrospectionType(getNamedType(type)) && !(parent && isIntrospectionType(parent))) {
      context.reportError(
        new GraphQLError(
          `Introspection is turned off on this server (GRAPHQL_INTROSPECTION=false; off by default in production), so "${node.name.value}" cannot be queried`,
          { nodes: [node] },
        ),
      );
    }
  },
});

/** Whether arrays and objects in `value` nest deeper than `limit`, found without recursion. */
function nestedDeeperThan(value: unknown, limit: number): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [next, depth] = pending.pop()!;
    if (typeof next !== 'object' || next === null) continue;
    if (depth + 1 > limit) return true;
    for (const child of Array.isArray(next) ? next : Object.values(next)) {
      if (typeof child === 'object' && child !== null) pending.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * The one place that decides what a GraphQL document may do, whatever carries it: Apollo over
 * HTTP (POST, GET, by text, by documentId or APQ, run by graphql-js or compiled by graphql-jit)
 * and graphql-ws subscriptions. Every check is written here once:
 * - the trusted-documents gate (TrustedDocuments, asked by nothing else);
 * - the text checks, before anything parses it: its length, repeated selections and fragments;
 * - the validation rules: graphql-js's own, the depth, alias, directive and credential-field
 *   limits, and introspection when it is turned off;
 * - the operation checks, once the operation is resolved: subscriptions only over WebSocket and
 *   queries and mutations only over HTTP, the variables' nesting, their coercion, the cost limit,
 *   and the checks added through BuildOptions.documentChecks.
 *
 * HTTP takes them through `httpHook` (the gate and the text checks, before Apollo reads the
 * request), Apollo's options (`validationRules`, and `plugin`, whose hooks run the operation
 * checks) and `coerceVariables`, which the executor asks before it runs an operation; the fast
 * path (fast-path.ts) through `admitOperation`; graphql-ws through `admitSubscription`, which runs
 * all of them in order. What depends only on a query
 * text (its text checks, its parsed and validated document or the errors) is remembered per
 * text, bounded.
 */
export class DocumentPolicy {
  /** Apollo's validation rules besides graphql-js's own (Apollo adds specifiedRules itself). */
  readonly validationRules: readonly ValidationRule[];
  readonly parseOptions = { maxTokens: LIMITS.tokens } as const;
  /** Validation stops at the 10th error: a document of a hundred mistakes cost 15-20 ms of CPU in error objects. */
  readonly validationOptions = { maxErrors: LIMITS.validationErrors } as const;
  private readonly trusted: TrustedDocuments;
  private readonly metrics: Pick<Metrics, 'documents' | 'documentsParsed'>;
  private readonly checks: readonly DocumentCheck[];
  private readonly checkCost: ReturnType<typeof costChecker>;
  private readonly textVerdicts = new Map<string, GraphQLError | null>();
  private readonly documents = new Map<string, TextVerdict>();

  /**
   * @throws ConfigError when a document of the TRUSTED_DOCUMENTS manifest breaks a check (start-up stops).
   */
  constructor(
    private readonly schema: GraphQLSchema,
    options: {
      introspection: boolean;
      isProduction: boolean;
      trustedDocuments: TrustedDocumentsManifest | undefined;
      metrics?: Pick<Metrics, 'documents' | 'documentsParsed'>;
      /** Checks added to the built-in ones (see DocumentCheck). */
      checks?: readonly DocumentCheck[];
    },
  ) {
    this.metrics = options.metrics ?? new Metrics();
    this.checks = options.checks ?? [];
    this.checkCost = costChecker(schema);
    this.validationRules = [...limitRules(), ...(options.introspection ? [] : [noIntrospection])];
    // Parses and validates the manifest's documents now, through checkDocument: a bad one stops start-up here.
    this.trusted = new TrustedDocuments(
      schema,
      options.trustedDocuments,
      { isProduction: options.isProduction, check: (source) => this.checkDocument(source, false) },
      this.metrics,
    );
  }

  /** Why a query text is refused before it is parsed (length, repeated selections, fragments), or undefined. */
  textError(source: string): GraphQLError | undefined {
    // Every later step (the parses, the document cache's hash) would read a longer one whole, again and again.
    if (source.length > LIMITS.queryLength) return badUserInput(`The query is longer than ${LIMITS.queryLength} characters`);
    let verdict = this.textVerdicts.get(source);
    if (verdict === undefined) {
      const repeated = repeatedSelections(source);
      verdict = repeated ? new GraphQLError(repeated, { extensions: { code: 'GRAPHQL_VALIDATION_FAILED', http: { status: 400 } } }) : null;
      // Short texts only: keyed by 100 KB texts, the cache held 100 MB.
      if (source.length <= MAX_REMEMBERED_QUERY) {
        if (this.textVerdicts.size >= MAX_VERDICTS) this.textVerdicts.clear();
        this.textVerdicts.set(source, verdict);
      }
    }
    return verdict ?? undefined;
  }

  /**
   * A text checked, parsed and validated as Apollo does it over HTTP (the same rules, token and
   * error limits, codes). A request's (`forRequest`) is counted and remembered per text; the
   * manifest's are checked once, at start.
   */
  private checkDocument(source: string, forRequest = true): TextVerdict {
    const known = this.documents.get(source);
    if (known) return known;
    let verdict: TextVerdict;
    const refused = this.textError(source);
    if (refused) verdict = { step: 'text', errors: [refused] };
    else {
      let document: DocumentNode | undefined;
      try {
        if (forRequest) this.metrics.documentsParsed.inc({ step: 'parse' });
        document = parse(source, this.parseOptions);
      } catch (error) {
        const message = error instanceof GraphQLError ? error.message : 'The query could not be parsed';
        verdict = { step: 'parse', errors: [new GraphQLError(message, { extensions: { code: 'GRAPHQL_PARSE_FAILED' } })] };
      }
      if (document) {
        if (forRequest) this.metrics.documentsParsed.inc({ step: 'validate' });
        const invalid = validate(this.schema, document, [...specifiedRules, ...this.validationRules], this.validationOptions);
        verdict =
          invalid.length > 0
            ? {
                step: 'validate',
                errors: invalid.map(
                  (error) => new GraphQLError(error.message, { nodes: error.nodes, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }),
                ),
              }
            : { document };
      }
    }
    if (forRequest) {
      if (this.documents.size >= MAX_REMEMBERED_DOCUMENTS) this.documents.delete(this.documents.keys().next().value!);
      this.documents.set(source, verdict!);
    }
    return verdict!;
  }

  /**
   * The operation checks, in order: transport, variables' nesting, cost, the added checks. The
   * variables' coercion is `coerceVariables`, asked separately because HTTP runs it with execution.
   */
  checkOperation(
    transport: Transport,
    document: DocumentNode,
    operation: OperationDefinitionNode | undefined,
    operationName: string | undefined,
    variables: Record<string, unknown>,
  ): GraphQLError | undefined {
    if (transport === 'http' && operation?.operation === OperationTypeNode.SUBSCRIPTION) {
      return badUserInput('Subscriptions are taken over WebSocket (graphql-transport-ws) at /graphql, not over HTTP');
    }
    if (transport === 'ws' && operation?.operation !== OperationTypeNode.SUBSCRIPTION) {
      return badUserInput('Only subscriptions are taken over WebSocket: send queries and mutations with POST /graphql');
    }
    // Bounded before anything walks the values (graphql-js's coercion and the cost limit's cache
    // key recurse). HTTP bodies and query strings are held to it before they are parsed (http/json-body.ts).
    if (nestedDeeperThan(variables, MAX_JSON_DEPTH)) {
      return badUserInput(`The variables nest arrays or objects deeper than ${MAX_JSON_DEPTH} levels`);
    }
    const tooCostly = this.checkCost(document, operation, operationName, variables);
    if (tooCostly) return tooCostly;
    if (!operation) return undefined;
    for (const check of this.checks) {
      const error = check({ document, operation, variables });
      if (error) return error;
    }
    return undefined;
  }

  /**
   * The variables coerced to their types (graphql-js's coercion), or BAD_USER_INPUT errors that
   * name the variable and the reason, without the value. Asked before execution on every route.
   */
  coerceVariables(
    definitions: readonly VariableDefinitionNode[],
    variables: Record<string, unknown>,
  ): { coerced: Record<string, unknown> } | { errors: readonly GraphQLError[] } {
    if (definitions.length === 0) return { coerced: {} };
    const result = getVariableValues(this.schema, definitions, variables, { maxErrors: LIMITS.validationErrors });
    if (!result.errors) return { coerced: result.coerced };
    return {
      errors: result.errors.map(
        (error) =>
          new GraphQLError(error.message, {
            nodes: error.nodes,
            originalError: error.originalError,
            extensions: { code: 'BAD_USER_INPUT' },
          }),
      ),
    };
  }

  /** A graphql-ws subscribe, through every check in order; what to run, or the errors to answer. */
  admitSubscription(
    payload: DocumentRequest & { operationName?: string | null; variables?: Record<string, unknown> | null },
  ): AdmittedSubscription | { readonly errors: readonly GraphQLError[] } {
    const admission = this.trusted.admit(payload);
    if (admission.kind === 'refused') return { errors: [admission.error] };
    let document: DocumentNode;
    if (admission.kind === 'trusted') document = admission.document.document;
    else {
      const checked = this.checkDocument(typeof payload.query === 'string' ? payload.query : '');
      if ('errors' in checked) return checked;
      document = checked.document;
    }
    const admitted = this.admitOperation('ws', document, payload.operationName, payload.variables ?? {});
    return 'errors' in admitted ? admitted : { document, operation: admitted.operation };
  }

  /**
   * The operation checks and the variables' coercion for a document that passed the checks on its
   * text (the gate, the text checks and the validation rules): the operation to run and its
   * coerced variables, or the errors to answer. Asked by graphql-ws's subscribe and by the fast
   * path (fast-path.ts); Apollo's route asks the same checks through `plugin` and the executor.
   */
  admitOperation(
    transport: Transport,
    document: DocumentNode,
    operationName: string | null | undefined,
    variables: Record<string, unknown>,
  ): AdmittedOperation | { readonly errors: readonly GraphQLError[] } {
    const operation = getOperationAST(document, operationName) ?? undefined;
    const refused = this.checkOperation(transport, document, operation, operationName ?? undefined, variables);
    if (refused) return { errors: [refused] };
    if (!operation) return { errors: [badUserInput('The operation to run could not be told from the document and operationName')] };
    const coerced = this.coerceVariables(operation.variableDefinitions ?? [], variables);
    if ('errors' in coerced) return coerced;
    return { operation, coerced: coerced.coerced };
  }

  /**
   * The /graphql preHandler: the trusted-documents gate, then the text checks, before Apollo or
   * anything else parses the text. A refused document is answered here: PERSISTED_QUERY_NOT_FOUND
   * with HTTP 200, a text check's error with 400.
   */
  httpHook(): preHandlerAsyncHookHandler {
    const gate = this.trusted.httpGate();
    return async (request: FastifyRequest, reply: FastifyReply) => {
      const refused = gate(request);
      // HTTP 200, as APQ clients expect.
      if (refused) return send(reply, 200, refused.message, 'PERSISTED_QUERY_NOT_FOUND');
      // A trusted document passed the text checks when the manifest was loaded.
      if (request.trustedDocument) return;
      const source =
        request.method === 'GET'
          ? (request.query as Record<string, unknown>).query
          : (request.body as Record<string, unknown> | null)?.query;
      if (typeof source !== 'string') return;
      const error = this.textError(source);
      if (error) return send(reply, 400, error.message, String(error.extensions.code));
    };
  }

  /**
   * The one Apollo plugin of the policy: the operation checks once Apollo has resolved the
   * operation (before any resolver runs), and the counts of the documents Apollo parses and
   * validates (it skips both for a document its store holds).
   */
  plugin(): ApolloServerPlugin {
    const parsed = this.metrics.documentsParsed;
    const hooks: GraphQLRequestListener<Record<string, unknown>> = {
      // void: prom-client's inc returns an object, which Apollo would take for an end hook.
      parsingDidStart: async () => void parsed.inc({ step: 'parse' }),
      validationDidStart: async () => void parsed.inc({ step: 'validate' }),
      didResolveOperation: async ({ document, request, operationName, operation }) => {
        const error = this.checkOperation('http', document, operation, operationName ?? undefined, request.variables ?? {});
        if (error) throw error;
      },
    };
    // The same hooks object for every request: it keeps no per-request state.
    return { requestDidStart: async () => hooks };
  }

  /** Apollo's document store: the trusted documents first (parsed and validated at start), then `others`. */
  documentStore(others: KeyValueCache<DocumentNode>): KeyValueCache<DocumentNode> {
    return this.trusted.documentStore(others);
  }

  /** Apollo's APQ cache: registrations are kept only when there is no manifest. */
  apqCache(): KeyValueCache<string> {
    return this.trusted.apqCache();
  }

  /** The plans compiled at start for the trusted documents (the executor asks before compiling one itself). */
  precompiled(): { compiledFor(document: DocumentNode): CompiledQuery | undefined } {
    return { compiledFor: (document) => this.trusted.compiledFor(document) };
  }
}

function send(reply: FastifyReply, status: number, message: string, code: string) {
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send({ errors: [{ message, extensions: { code } }] });
}

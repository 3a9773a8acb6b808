import { HeaderMap, type ApolloServerPlugin, type GraphQLRequest, type GraphQLRequestListener, type GraphQLResponse } from '@apollo/server';
import type { KeyValueCache } from '@apollo/utils.keyvaluecache';
import {
  execute,
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
  type ExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
  type VariableDefinitionNode,
} from 'graphql';
import type { TrustedDocumentsManifest } from '../config';
import { MAX_JSON_DEPTH } from '../http/json-body';
import type { Tracing } from '../telemetry/spans';
import { createFormatError, graphqlError, logUnexpectedErrors } from './format-error';
import type { GraphQLContext } from './context';
import { DocumentCache, hashOf, STAND_IN, type DocumentEntry, type TextVerdict } from './document-cache';
import { costChecker, LIMITS, limitRules, repeatedSelections, type CostChecker } from './limits';
import { planOf, runPlan } from './plans';
import { normalizedId, TrustedDocuments, type DocumentRequest } from './trusted-documents';
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
 * A check added to the pipeline (BuildOptions.documentChecks): asked of every operation on every
 * route, after the built-in operation checks; the error it returns refuses the operation (over
 * HTTP with its `extensions.http.status`; Apollo answers 500 without one).
 */
export type DocumentCheck = (operation: CheckedOperation) => GraphQLError | undefined;

/** What a graphql-ws subscribe runs once the pipeline has admitted it. */
export interface AdmittedSubscription {
  readonly document: DocumentNode;
  readonly operation: OperationDefinitionNode;
}

const badUserInput = (message: string) => graphqlError('BAD_USER_INPUT', message);

/**
 * Apollo's own rule for `introspection: false` tells clients to "pass introspection: true to
 * ApolloServer"; this one names the setting of this service.
 */
const noIntrospection: ValidationRule = (context) => ({
  Field(node) {
    const type = context.getType();
    const parent = context.getParentType();
    // A subgraph's `_service { sdl }` is its schema too (FEDERATION=true).
    if (node.name.value === '_service' && parent === context.getSchema().getQueryType()) {
      context.reportError(
        new GraphQLError(
          'The schema is not served on this server (GRAPHQL_INTROSPECTION=false; off by default in production), so "_service" cannot be queried: compose the router from subgraph.graphql',
          { nodes: [node] },
        ),
      );
      return;
    }
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
 * The one pipeline of a GraphQL document, whichever door it comes through: Apollo Server over
 * HTTP (POST, GET, by text, by documentId or APQ) and graphql-ws over WebSocket. It admits a
 * document, runs it and keeps what is known about it; every check is written here once:
 * - the trusted-documents gate (TrustedDocuments, asked by nothing else);
 * - the text checks, before anything parses it: its length, repeated selections and fragments;
 * - the validation rules: graphql-js's own, the depth, alias, directive and credential-field
 *   limits, and introspection when it is turned off;
 * - the operation checks, once the operation is resolved: subscriptions only over WebSocket and
 *   queries and mutations only over HTTP, the variables' nesting, their coercion, the cost limit,
 *   and the checks added through BuildOptions.documentChecks;
 * - the run: graphql-js, or the plan graphql-jit compiled for the document (plans.ts).
 *
 * What is known about a document text (its verdict, its uses, its plan) is one entry of one
 * cache (DocumentCache), which is also Apollo's document store.
 *
 * The HTTP door is Apollo, configured from here: Apollo's parse and validation with
 * `parseOptions`, `validationRules` and `documentStore`, and `plugin`, whose hooks take every
 * other step (the gate and the text checks before Apollo parses, the operation checks, the run).
 * The WebSocket door asks `admitSubscription`, which runs the same steps in the same order.
 */
export class Pipeline {
  /** Apollo's validation rules besides graphql-js's own (Apollo adds specifiedRules itself). */
  readonly validationRules: readonly ValidationRule[];
  readonly parseOptions = { maxTokens: LIMITS.tokens } as const;
  /** Validation stops at the 10th error: a document of a hundred mistakes cost 15-20 ms of CPU in error objects. */
  readonly validationOptions = { maxErrors: LIMITS.validationErrors } as const;
  private readonly trusted: TrustedDocuments;
  private readonly documents: DocumentCache;
  private readonly metrics: Pick<Metrics, 'documents' | 'documentsParsed' | 'compiledRuns'>;
  private readonly checks: readonly DocumentCheck[];
  private readonly cost: CostChecker;

  /**
   * @throws ConfigError when a document of the TRUSTED_DOCUMENTS manifest breaks a check (start-up stops).
   */
  constructor(
    private readonly schema: GraphQLSchema,
    options: {
      introspection: boolean;
      isProduction: boolean;
      trustedDocuments: TrustedDocumentsManifest | undefined;
      /** FEDERATION_ROUTER_SECRET: a request with it in `router-secret` may run documents outside the manifest. */
      routerSecret?: string;
      /** Counts documents (how they came, parsed, validated) and compiled runs (GET /metrics shows them). */
      metrics?: Pick<Metrics, 'documents' | 'documentsParsed' | 'compiledRuns'>;
      /** Checks added to the built-in ones (see DocumentCheck). */
      checks?: readonly DocumentCheck[];
      /** With tracing on: a span around each operation's run. */
      tracing?: Pick<Tracing, 'operation'>;
    },
  ) {
    this.metrics = options.metrics ?? new Metrics();
    this.format = createFormatError(options);
    this.tracing = options.tracing;
    this.checks = options.checks ?? [];
    this.cost = costChecker(schema);
    this.validationRules = [...limitRules(), ...(options.introspection ? [] : [noIntrospection])];
    // Parses, validates and compiles the manifest's documents now: a bad one stops start-up here.
    this.trusted = new TrustedDocuments(
      schema,
      options.trustedDocuments,
      { isProduction: options.isProduction, check: (source) => this.checkText(source), routerSecret: options.routerSecret },
      this.metrics,
    );
    this.documents = new DocumentCache(this.trusted.entries());
  }

  private readonly tracing: Pick<Tracing, 'operation'> | undefined;
  /** The one formatter of GraphQL errors (format-error.ts), as Apollo's and the WebSocket's. */
  private readonly format: ReturnType<typeof createFormatError>;

  /** Why a query text is refused before it is parsed (length, repeated selections, fragments), or undefined. */
  private textError(source: string): GraphQLError | undefined {
    // Every later step (the parses, the hash) would read a longer one whole, again and again.
    if (source.length > LIMITS.queryLength) return badUserInput(`The query is longer than ${LIMITS.queryLength} characters`);
    const repeated = repeatedSelections(source);
    return repeated ? graphqlError('GRAPHQL_VALIDATION_FAILED', repeated) : undefined;
  }

  /** A text checked, parsed and validated as Apollo does it over HTTP (the same rules, token and error limits, codes). */
  private checkText(source: string): TextVerdict {
    const refused = this.textError(source);
    if (refused) return { step: 'text', errors: [refused] };
    let document: DocumentNode;
    try {
      document = parse(source, this.parseOptions);
    } catch (error) {
      const message = error instanceof GraphQLError ? error.message : 'The query could not be parsed';
      return { step: 'parse', errors: [badUserInput(message)] };
    }
    const invalid = validate(this.schema, document, [...specifiedRules, ...this.validationRules], this.validationOptions);
    if (invalid.length === 0) return { document };
    return {
      step: 'validate',
      errors: invalid.map((error) => graphqlError('GRAPHQL_VALIDATION_FAILED', error.message, { nodes: error.nodes })),
    };
  }

  /**
   * What a request over HTTP weighs at the API's door (http/admission.ts), before anything parses
   * it: the cost its document was last let through at (at least 1), when the cache knows the
   * document by its id or by its text's hash; else 1 (it is measured when it runs, and weighs that
   * from then on). A cost over the limit is never remembered: such a request is refused cheaply.
   */
  weightOf(payload: DocumentRequest | undefined): number {
    const { query, documentId } = payload ?? {};
    const hash =
      documentId !== undefined && documentId !== null
        ? normalizedId(documentId)
        : typeof query === 'string' && query.length <= LIMITS.queryLength
          ? hashOf(query)
          : undefined;
    const verdict = hash === undefined ? undefined : this.documents.get(hash)?.verdict;
    const cost = verdict && 'document' in verdict ? this.cost.lastCost(verdict.document) : undefined;
    // Within 1..LIMITS.cost: a limit of 0 or less makes a cost of 0 or less, and nothing weighs nothing.
    return cost === undefined ? 1 : Math.min(LIMITS.cost, Math.max(1, cost));
  }

  /** A request's text, from the cache or checked now (counted as parsed and validated when it got that far). */
  private entryFor(source: string): DocumentEntry {
    const hash = hashOf(source);
    const known = this.documents.get(hash);
    if (known) return known;
    const verdict = this.checkText(source);
    if (!('step' in verdict) || verdict.step !== 'text') this.metrics.documentsParsed.inc({ step: 'parse' });
    if (!('step' in verdict) || verdict.step === 'validate') this.metrics.documentsParsed.inc({ step: 'validate' });
    return this.documents.remember(hash, verdict);
  }

  /**
   * The operation checks, in order: transport, variables' nesting, cost, the added checks. The
   * variables' coercion is `coerceVariables`, asked separately because HTTP runs it with execution.
   */
  private checkOperation(
    transport: Transport,
    document: DocumentNode,
    operation: OperationDefinitionNode | undefined,
    operationName: string | undefined,
    variables: Record<string, unknown>,
  ): GraphQLError | undefined {
    if (transport === 'http' && operation?.operation === OperationTypeNode.SUBSCRIPTION) {
      return badUserInput(
        'Subscriptions are taken over WebSocket (graphql-transport-ws) at /graphql and over Server-Sent Events (graphql-sse) at /graphql/stream',
      );
    }
    if (transport === 'ws' && operation?.operation !== OperationTypeNode.SUBSCRIPTION) {
      return badUserInput('Only subscriptions are taken here: send queries and mutations with POST /graphql');
    }
    // Bounded before anything walks the values (graphql-js's coercion and the cost limit's cache
    // key recurse). HTTP bodies and query strings are held to it before they are parsed (http/json-body.ts).
    if (nestedDeeperThan(variables, MAX_JSON_DEPTH)) {
      return badUserInput(`The variables nest arrays or objects deeper than ${MAX_JSON_DEPTH} levels`);
    }
    const tooCostly = this.cost.check(document, operation, operationName, variables);
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
   * name the variable and the reason, without the value. Asked before every run.
   */
  private coerceVariables(
    definitions: readonly VariableDefinitionNode[],
    variables: Record<string, unknown>,
  ): { coerced: Record<string, unknown> } | { errors: readonly GraphQLError[] } {
    if (definitions.length === 0) return { coerced: {} };
    const result = getVariableValues(this.schema, definitions, variables, { maxErrors: LIMITS.validationErrors });
    if (!result.errors) return { coerced: result.coerced };
    return {
      errors: result.errors.map((error) =>
        graphqlError('BAD_USER_INPUT', error.message, { nodes: error.nodes, originalError: error.originalError }),
      ),
    };
  }

  /**
   * The doors of live events (a graphql-ws subscribe, a graphql-sse request): a subscription
   * through every step in order; what to run, or the errors to answer.
   */
  admitSubscription(
    payload: DocumentRequest & { operationName?: string | null; variables?: Record<string, unknown> | null },
  ): AdmittedSubscription | { readonly errors: readonly GraphQLError[] } {
    const admission = this.trusted.admit(payload);
    if (admission.kind === 'refused') return { errors: [admission.error] };
    const verdict =
      admission.kind === 'trusted'
        ? admission.document.entry.verdict
        : this.entryFor(typeof payload.query === 'string' ? payload.query : '').verdict;
    if ('errors' in verdict) return { errors: verdict.errors };
    const { document } = verdict;
    const operationName = payload.operationName ?? undefined;
    const variables = payload.variables ?? {};
    const operation = getOperationAST(document, operationName) ?? undefined;
    const refused = this.checkOperation('ws', document, operation, operationName, variables);
    if (refused) return { errors: [refused] };
    if (!operation) return { errors: [badUserInput('The operation to run could not be told from the document and operationName')] };
    const coerced = this.coerceVariables(operation.variableDefinitions ?? [], variables);
    if ('errors' in coerced) return coerced;
    return { document, operation };
  }

  /**
   * A request refused before Apollo reads its text (by the trusted-documents gate, or for its
   * length) is given the stand-in text instead, so that nothing parses or even hashes what was
   * sent; its refusal waits here for didResolveOperation to answer it.
   */
  private readonly refusals = new WeakMap<GraphQLRequest, GraphQLError>();

  /** A request's refusal: decided before Apollo read its text, or by the text checks of its text (cached). */
  private refusalOf(request: GraphQLRequest, hash: string | undefined): GraphQLError | undefined {
    const refused = this.refusals.get(request);
    if (refused) return refused;
    const verdict = hash === undefined ? undefined : this.documents.get(hash)?.verdict;
    return verdict && 'step' in verdict && verdict.step === 'text' ? verdict.errors[0] : undefined;
  }

  /**
   * The Apollo plugin of the pipeline, the HTTP door's every step after Apollo took the request:
   * - `requestDidStart`, before Apollo reads the text: the trusted-documents gate (a document named
   *   by id becomes its text) and the length check;
   * - `didResolveSource`, once Apollo hashed the text: the text checks of a text the cache does not
   *   know (a refusal is cached, and Apollo's store then hands back the stand-in document);
   * - `didResolveOperation`: the refusal decided above, if any (PERSISTED_QUERY_NOT_FOUND with HTTP
   *   200, a text check's error with 400), else the operation checks, before any resolver runs;
   * - `responseForOperation` (the hook Apollo gives a plugin to answer an operation): the
   *   variables coerced, the document's compiled plan when it has earned one (plans.ts), else
   *   graphql-js; the errors through the one formatter.
   * Apollo answers by itself only what it refuses on its own (a body that is no GraphQL request,
   * parse and validation errors, an operation name that resolves to nothing). Also counts the
   * documents Apollo parses and validates (it skips both for a document the cache holds).
   */
  plugin(): ApolloServerPlugin<GraphQLContext> {
    const parsed = this.metrics.documentsParsed;
    const hooks: GraphQLRequestListener<GraphQLContext> = {
      didResolveSource: async ({ request, source, queryHash }) => {
        if (this.refusals.has(request) || this.documents.get(queryHash)) return;
        const error = this.textError(source);
        if (error) this.documents.remember(queryHash, { step: 'text', errors: [error] });
      },
      // `void`: a value returned here would be taken for an end hook (inc returns its counter).
      parsingDidStart: async () => void parsed.inc({ step: 'parse' }),
      validationDidStart: async () => void parsed.inc({ step: 'validate' }),
      didResolveOperation: async ({ document, request, operationName, operation, contextValue, queryHash }) => {
        const refused = this.refusalOf(request, queryHash);
        if (refused) throw refused;
        if (contextValue.request) contextValue.request.operationName = operationName;
        const error = this.checkOperation('http', document, operation, operationName ?? undefined, request.variables ?? {});
        if (error) throw error;
      },
      responseForOperation: async ({ document, operation: resolved, operationName, request, contextValue, queryHash }) => {
        // Typed as always there, but Apollo asks before it checks that the operation name resolved
        // (an unknown or empty operationName, several operations and none named): then Apollo
        // answers it, as graphql-js reports it (400).
        const operation: OperationDefinitionNode | undefined = resolved;
        if (!operation) return null;
        // Apollo sets the hash for every request that reaches its pipeline; without one, no plan is looked up.
        const run = () => this.run(document, operation, request.variables ?? {}, contextValue, queryHash ?? '');
        const result = this.tracing ? await this.tracing.operation(operation.operation, operationName, run) : await run();
        return this.response(result, contextValue);
      },
    };
    return {
      requestDidStart: async ({ request }) => {
        const refused =
          this.trusted.admitHttp(request) ??
          // Every later step would read a longer one whole, the hash first.
          (typeof request.query === 'string' && request.query.length > LIMITS.queryLength ? this.textError(request.query) : undefined);
        if (refused) {
          this.refusals.set(request, refused);
          request.query = STAND_IN;
          request.extensions = undefined;
        }
        // The same hooks object for every request: it keeps no per-request state.
        return hooks;
      },
    };
  }

  /** Runs an admitted operation: its variables coerced (their errors answered), then its plan or graphql-js. */
  private async run(
    document: DocumentNode,
    operation: OperationDefinitionNode,
    variables: Record<string, unknown>,
    contextValue: GraphQLContext,
    hash: string,
  ): Promise<ExecutionResult> {
    const input = this.coerceVariables(operation.variableDefinitions ?? [], variables);
    if ('errors' in input) return { errors: input.errors };
    const entry = this.documents.get(hash);
    const plan = entry && planOf(this.schema, entry, () => this.documents.planned(hash, entry));
    if (plan) {
      this.metrics.compiledRuns.inc();
      return runPlan(this.schema, plan, operation, contextValue, input.coerced);
    }
    const operationName = operation.name?.value;
    return execute({ schema: this.schema, document, contextValue, variableValues: variables, operationName });
  }

  /**
   * A result as Apollo sends it: errors formatted, the unexpected ones logged, and HTTP 400 when
   * the run was refused as a whole (the variables: no data, an error that names its status).
   */
  private response(result: ExecutionResult, contextValue: GraphQLContext): GraphQLResponse {
    const errors = result.errors ?? [];
    if (errors.length > 0) logUnexpectedErrors(contextValue.log, errors);
    const status = result.data === undefined ? (errors[0]?.extensions.http as { status?: number } | undefined)?.status : undefined;
    return {
      http: { status, headers: new HeaderMap() },
      body: {
        kind: 'single',
        singleResult: {
          ...(errors.length > 0 ? { errors: errors.map((error) => this.format(error.toJSON(), error)) } : {}),
          ...(result.data === undefined ? {} : { data: result.data }),
        },
      },
    };
  }

  /** Apollo's document store: this pipeline's cache of documents. */
  documentStore(): KeyValueCache<DocumentNode> {
    return this.documents.apolloStore();
  }

  /** Apollo's APQ cache: registrations are kept only when there is no manifest. */
  apqCache(): KeyValueCache<string> {
    return this.trusted.apqCache();
  }
}

import type { ApolloServerOptionsWithGateway } from '@apollo/server';
import {
  execute,
  Kind,
  visit,
  GraphQLError,
  isInputObjectType,
  isListType,
  isNonNullType,
  typeFromAST,
  type GraphQLInputType,
  type DocumentNode,
  type ExecutionResult,
  type OperationDefinitionNode,
  type GraphQLSchema,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { DocumentPolicy } from './document-policy';
import type { Tracing } from '../telemetry/spans';
import { Metrics } from '../ops/metrics';

type Gateway = ApolloServerOptionsWithGateway<Record<string, unknown>>['gateway'];
type Executor = NonNullable<Awaited<ReturnType<Gateway['load']>>['executor']>;

/**
 * Compiling costs CPU, milliseconds for a document of a few KB (many aliases, nested fields). So
 * a document is compiled only when it is short and has run COMPILE_AFTER times on graphql-js: an
 * app's own queries are short and repeated, while a stream of distinct documents (an attacker's,
 * or one-off queries) never pays for compilation, and one sent again and again pays for it once
 * every COMPILE_AFTER requests at most.
 */
const MAX_COMPILED_LENGTH = 2048;
const COMPILE_AFTER = 10;
/** `seen` marks a document that is never compiled. */
const NEVER = -1;

/**
 * Whether graphql-jit 0.8.9 answers this document as graphql-js does. Not when it holds:
 * - `@skip` or `@include`: graphql-jit records their conditions on the document's own field
 *   nodes and never clears them, so a fragment's other uses, and the document's other
 *   operations, took on the condition (`b: trainer { ...F }` came back `{}`);
 * - a variable inside a list or object literal (`filter: { team: $t }`): left out, it became
 *   null instead of absent, so the filter matched no one and a field's default was lost;
 * - more than one operation: one compiled query per document keeps the cache's bound a bound.
 */
export function compilable(document: DocumentNode): boolean {
  if (document.definitions.filter((definition) => definition.kind === Kind.OPERATION_DEFINITION).length !== 1) return false;
  let safe = true;
  let literalDepth = 0;
  visit(document, {
    Directive(node) {
      if (node.name.value === 'skip' || node.name.value === 'include') safe = false;
    },
    ObjectValue: { enter: () => void (literalDepth += 1), leave: () => void (literalDepth -= 1) },
    ListValue: { enter: () => void (literalDepth += 1), leave: () => void (literalDepth -= 1) },
    Variable() {
      if (literalDepth > 0) safe = false;
    },
  });
  return safe;
}

/** Compiled documents kept at once (least recently used first out). */
const MAX_COMPILED = 256;

/**
 * graphql-jit reports errors with a GraphQLError of its own, without the `extensions` object
 * graphql-js always sets; Apollo reads `extensions.code` and, failing, answered "Internal server
 * error" for every error, an AppError's too. Each becomes graphql's own, with the same message,
 * locations, path and cause.
 */
function asGraphQLError(error: GraphQLError): GraphQLError {
  const converted = new GraphQLError(error.message, {
    path: error.path,
    originalError: error.originalError,
    extensions: error.extensions,
  });
  (converted as { locations?: GraphQLError['locations'] }).locations = error.locations;
  return converted;
}

/**
 * A value graphql-js has coerced, written back as a client would send it (enums by name,
 * scalars serialized), defaults included.
 */
function asInput(type: GraphQLInputType, value: unknown): unknown {
  if (value === null || value === undefined) return value;
  if (isNonNullType(type)) return asInput(type.ofType, value);
  if (isListType(type)) return Array.isArray(value) ? value.map((item) => asInput(type.ofType, item)) : asInput(type.ofType, value);
  if (isInputObjectType(type)) {
    const fields = type.getFields();
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, asInput(fields[name].type, item)]));
  }
  return type.serialize(value);
}

/**
 * The variables a compiled query takes, from those the policy coerced. graphql-jit's own variable
 * handling differs from graphql-js: its errors name the wrong variable and carry no location, and
 * it refuses a variable or input field left out that has a default. So it gets them back in input
 * form, defaults filled in.
 */
function compiledVariables(
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
  coerced: Record<string, unknown>,
): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const definition of operation.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    if (!Object.hasOwn(coerced, name)) continue;
    const type = typeFromAST(schema, definition.type) as GraphQLInputType;
    values[name] = asInput(type, coerced[name]);
  }
  return values;
}

/** The HTTP request a context was made for (the fast path hands results over by it). */
function requestOf(context: Record<string, unknown>): object | undefined {
  const { request } = context;
  return typeof request === 'object' && request !== null ? request : undefined;
}

/**
 * Runs operations through graphql-jit, which compiles a document into JavaScript that resolves
 * it, instead of graphql-js's generic interpreter: for the nested page (100 trainers × 10
 * creatures) far fewer objects and promises per field, which is most of its CPU (see
 * bench/README.md). Apollo Server takes a custom executor only through its gateway interface;
 * everything before execution (parsing, validation, the document policy's checks, plugins, error
 * formatting) is Apollo's and the policy's as before. The variables are coerced by the policy
 * (DocumentPolicy.coerceVariables) before either engine runs the operation.
 *
 * A short document is compiled once it has run COMPILE_AFTER times (see there). Compiled
 * documents are kept in a bounded LRU keyed by the parsed document, which Apollo's document store
 * hands back for the same query text.
 */
export class CompilingExecutor {
  private readonly seen = new WeakMap<DocumentNode, number>();
  private readonly compiled = new Map<DocumentNode, CompiledQuery>();
  /** Query texts run compiled, for the fast path (see knownPlan). */
  private readonly bySource = new Map<string, { document: DocumentNode; plan: CompiledQuery }>();
  /** Results the fast path ran and left to Apollo to write, by request (see handOver). */
  private readonly handedOver = new WeakMap<object, { source: string; result: ExecutionResult }>();

  constructor(
    private readonly schema: GraphQLSchema,
    /** Coerces the variables before execution; its plans compiled at start for the trusted documents come first. */
    private readonly policy: Pick<DocumentPolicy, 'coerceVariables' | 'precompiled'>,
    /** `compiledRuns` counts the operations run by a compiled plan (GET /metrics shows it). */
    private readonly metrics: Pick<Metrics, 'compiledRuns'> = new Metrics(),
    /** With tracing on: a span around each operation's execution. */
    private readonly tracing?: Pick<Tracing, 'operation'>,
  ) {
    this.precompiled = policy.precompiled();
  }

  private readonly precompiled: { compiledFor(document: DocumentNode): CompiledQuery | undefined };

  readonly execute: Executor = (requestContext) => {
    if (!this.tracing) return this.run(requestContext);
    const type = requestContext.operation?.operation ?? 'query';
    return this.tracing.operation(type, requestContext.operationName ?? requestContext.request.operationName, () =>
      this.run(requestContext),
    );
  };

  private readonly run: Executor = async (requestContext) => {
    const { document, request, context: contextValue } = requestContext;
    // Run already by the fast path, which leaves an answer with errors to Apollo: never run twice.
    const handedOverFor = requestOf(contextValue);
    const ran = handedOverFor && this.handedOver.get(handedOverFor);
    if (ran) {
      this.handedOver.delete(handedOverFor);
      if (ran.source === request.query) return ran.result;
    }
    // Typed as always there, but Apollo calls the executor before it checks that the operation
    // name resolved (an unknown or empty operationName, several operations and none named): it
    // expects the executor to report that as graphql-js does, and makes the answer a 400 from it.
    const operation: OperationDefinitionNode | undefined = requestContext.operation;
    const operationName = request.operationName ?? null;
    const variables = request.variables ?? {};
    // Without an operation graphql-js reports why (unknown name, several and none named).
    if (!operation) return execute({ schema: this.schema, document, contextValue, variableValues: variables, operationName });
    const input = this.policy.coerceVariables(operation.variableDefinitions ?? [], variables);
    if ('errors' in input) return { errors: input.errors };
    const compiled = this.compiledFor(document);
    if (compiled) {
      if (request.query !== undefined) this.remember(request.query, document, compiled);
      return this.runPlan(compiled, operation, contextValue, input.coerced);
    }
    return execute({ schema: this.schema, document, contextValue, variableValues: variables, operationName });
  };

  /**
   * Runs a compiled plan with variables the policy coerced; the fast path (fast-path.ts) runs
   * plans through here too, so both count them and report errors alike.
   */
  async runPlan(
    plan: CompiledQuery,
    operation: OperationDefinitionNode,
    contextValue: object,
    coerced: Record<string, unknown>,
  ): Promise<ExecutionResult> {
    this.metrics.compiledRuns.inc();
    const result = (await plan.query(undefined, contextValue, compiledVariables(this.schema, operation, coerced))) as ExecutionResult;
    return result.errors ? { ...result, errors: result.errors.map(asGraphQLError) } : result;
  }

  /**
   * The document and plan of a query text this executor has run compiled for Apollo's route, the
   * most recent MAX_COMPILED texts (the fast path answers them).
   */
  knownPlan(source: string): { readonly document: DocumentNode; readonly plan: CompiledQuery } | undefined {
    return this.bySource.get(source);
  }

  /** A result the fast path got with errors, for Apollo to write: this request's execution returns it. */
  handOver(request: object, source: string, result: ExecutionResult): void {
    this.handedOver.set(request, { source, result });
  }

  private remember(source: string, document: DocumentNode, plan: CompiledQuery): void {
    if (source.length > MAX_COMPILED_LENGTH || this.bySource.get(source)?.plan === plan) return;
    this.bySource.delete(source);
    this.bySource.set(source, { document, plan });
    if (this.bySource.size > MAX_COMPILED) this.bySource.delete(this.bySource.keys().next().value!);
  }

  /** The compiled operation when this document has earned one, else undefined (run it on graphql-js). */
  private compiledFor(document: DocumentNode): CompiledQuery | undefined {
    const trusted = this.precompiled.compiledFor(document);
    if (trusted) return trusted;
    const hit = this.compiled.get(document);
    if (hit) {
      // Most recently used last.
      this.compiled.delete(document);
      this.compiled.set(document, hit);
      return hit;
    }
    const short = (document.loc?.source.body.length ?? Infinity) <= MAX_COMPILED_LENGTH;
    const uses = this.seen.get(document) ?? (short && compilable(document) ? 0 : NEVER);
    if (uses === NEVER) {
      this.seen.set(document, NEVER);
      return undefined;
    }
    this.seen.set(document, uses + 1);
    if (uses + 1 < COMPILE_AFTER) return undefined;
    const result = compileQuery(this.schema, document);
    if (!isCompiledQuery(result)) {
      this.seen.set(document, NEVER);
      return undefined;
    }
    this.compiled.set(document, result);
    if (this.compiled.size > MAX_COMPILED) {
      const evicted = this.compiled.keys().next().value!;
      this.compiled.delete(evicted);
      // It runs COMPILE_AFTER times on graphql-js again before it is compiled again.
      this.seen.set(evicted, 0);
    }
    return result;
  }

  /** Apollo's gateway interface around this executor, for a schema that never changes. */
  gateway(): Gateway {
    const schema = this.schema;
    return {
      load: async () => ({ executor: this.execute }),
      onSchemaLoadOrUpdate: (callback) => {
        callback({ apiSchema: schema, coreSupergraphSdl: '' });
        return () => undefined;
      },
      stop: async () => undefined,
    };
  }
}

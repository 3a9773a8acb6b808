import type { FastifyRequest } from 'fastify';
import { OperationTypeNode, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { CompiledQuery } from 'graphql-jit';
import type { GraphQLContext } from './context';
import { compiledVariables } from './executor';
import type { costChecker } from './limits';
import type { Tracing } from '../telemetry/spans';

/** A query Apollo has parsed, validated, checked and run compiled: what answering it again takes. */
export interface KnownQuery {
  readonly document: DocumentNode;
  readonly operation: OperationDefinitionNode;
  /** As Apollo names it to plugins: the operation's own name, or null. */
  readonly operationName: string | null;
  readonly compiled: CompiledQuery;
}

/**
 * Query texts kept at once, the oldest out first (one put out is remembered again the next time
 * Apollo runs it compiled); each is at most 2 KB (see executor.ts).
 */
const MAX_KNOWN = 256;

/**
 * Answers again, without Apollo's per-request pipeline, a query that went through all of it
 * before. Apollo's pipeline (the body's checks, the query's SHA-256 for its document cache, the
 * plugins' hooks, content negotiation, a dozen promises) cost a `trainer(id)` about as much CPU as
 * the rest of the request together (bench/README.md). What it decides about a query text never
 * changes: the schema is fixed, and so are the validation rules, the depth, alias and directive
 * limits. So once Apollo has run a text compiled (see CompilingExecutor), the text is remembered
 * here, and the same text comes back answered from its compiled plan, with what depends on the
 * request done again exactly as Apollo's plugins do it: the cost limit (it depends on the
 * variables), the variables' coercion, the operation name for logs and metrics.
 *
 * A trusted document's query (TRUSTED_DOCUMENTS, by id or identical text) is answered here from
 * its first request, from the plan compiled when the manifest was loaded.
 *
 * Only the plain case is taken: a POST of `{ query, variables?, operationName? }` naming the
 * remembered operation, a query (never a mutation), an `Accept` Apollo answers with JSON, and an
 * answer without errors. Anything else (another key such as `extensions`, a variable that does
 * not fit, a cost over the limit, an error while resolving) goes to Apollo, which decides and
 * formats it as it always has. A query that ran here and failed is not run again: Apollo reports
 * the result it had (CompilingExecutor asks ranFor), so its errors are written and logged as
 * Apollo's own. Mutations are left to Apollo whole.
 */
export class DirectQueries {
  private readonly known = new Map<string, KnownQuery>();
  /** Results with errors, left for Apollo to report (see ranFor). */
  private readonly failed = new WeakMap<object, { source: string; result: ExecutionResult }>();

  /**
   * @param answered counts the queries answered here (GET /metrics shows it).
   * @param trusted the trusted documents' plans, compiled at start: answered here from the first request.
   */
  constructor(
    private readonly schema: GraphQLSchema,
    private readonly checkCost: ReturnType<typeof costChecker>,
    private readonly contextFor: (request: FastifyRequest) => GraphQLContext,
    private readonly answered: { count: number } = { count: 0 },
    private readonly trusted?: { knownQuery(source: string): KnownQuery | undefined },
    /** With tracing on: a span around each operation answered here. */
    private readonly tracing?: Pick<Tracing, 'operation'>,
  ) {}

  /** Called by the executor when Apollo's pipeline has run `source` compiled. */
  remember(source: string, query: KnownQuery): void {
    if (query.operation.operation !== OperationTypeNode.QUERY || this.known.has(source)) return;
    this.known.set(source, query);
    if (this.known.size > MAX_KNOWN) this.known.delete(this.known.keys().next().value!);
  }

  /** The result this request's query text already had here, when Apollo is to report its errors; once. */
  ranFor(request: unknown, source: string | undefined): ExecutionResult | undefined {
    if (typeof request !== 'object' || request === null) return undefined;
    const ran = this.failed.get(request);
    if (!ran) return undefined;
    this.failed.delete(request);
    return ran.source === source ? ran.result : undefined;
  }

  /** The answer's text when this request can be answered here, else undefined (Apollo answers it). */
  async answer(request: FastifyRequest, setContentType: (type: string) => void): Promise<string | undefined> {
    if (request.method !== 'POST') return undefined;
    const body = request.body as Record<string, unknown> | null | undefined;
    if (typeof body?.query !== 'string') return undefined;
    const query = this.trusted?.knownQuery(body.query) ?? this.known.get(body.query);
    if (!query) return undefined;
    for (const key in body) if (key !== 'query' && key !== 'variables' && key !== 'operationName') return undefined;
    const { variables, operationName } = body;
    if (operationName !== undefined && operationName !== null && operationName !== query.operationName) return undefined;
    if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return undefined;
    const contentType = answerType(request.headers.accept);
    if (contentType === undefined) return undefined;

    const given = (variables ?? {}) as Record<string, unknown>;
    if (this.checkCost(query.document, query.operation, query.operationName ?? undefined, given)) return undefined;
    const input = compiledVariables(this.schema, query.operation, given);
    if ('errors' in input) return undefined;
    request.operationName = query.operationName;
    const run = async () => (await query.compiled.query(undefined, this.contextFor(request), input.values)) as ExecutionResult;
    const result = this.tracing ? await this.tracing.operation(query.operation.operation, query.operationName, run) : await run();
    if (result.errors) {
      // Apollo reports them (formatting, status, logging) from this very result: the query is not run again.
      this.failed.set(request, { source: body.query, result });
      return undefined;
    }
    this.answered.count += 1;
    setContentType(contentType);
    // Apollo's own text for a result without errors or extensions.
    return `${JSON.stringify({ data: result.data })}\n`;
  }
}

const JSON_TYPE = 'application/json; charset=utf-8';
const GRAPHQL_RESPONSE_TYPE = 'application/graphql-response+json; charset=utf-8';
/**
 * The `Accept` headers clients send most, with the type Apollo's negotiation answers them with;
 * any other goes through Apollo's negotiation.
 */
const ANSWER_TYPES = new Map<string | undefined, string>([
  [undefined, JSON_TYPE],
  ['*/*', JSON_TYPE],
  ['application/json', JSON_TYPE],
  ['application/graphql-response+json', GRAPHQL_RESPONSE_TYPE],
  // Apollo Client's, graphql-request's and urql's.
  ['application/graphql-response+json,application/json;q=0.9', GRAPHQL_RESPONSE_TYPE],
  ['application/graphql-response+json, application/json;q=0.9', GRAPHQL_RESPONSE_TYPE],
  ['application/graphql-response+json, application/graphql+json, application/json', GRAPHQL_RESPONSE_TYPE],
]);

function answerType(accept: string | undefined): string | undefined {
  return ANSWER_TYPES.get(accept);
}

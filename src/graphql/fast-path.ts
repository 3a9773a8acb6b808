import type { FastifyReply, FastifyRequest } from 'fastify';
import { OperationTypeNode } from 'graphql';
import Negotiator from 'negotiator';
import type { GraphQLContext } from './context';
import type { DocumentPolicy } from './document-policy';
import type { CompilingExecutor } from './executor';
import type { Tracing } from '../telemetry/spans';
import { Metrics } from '../ops/metrics';

/**
 * The GraphQL-over-HTTP response media types, in the order that breaks ties (application/json for
 * `*` / `*`, as for clients older than the spec). A client that prefers anything else (Apollo's
 * multipart callback type, say) is answered by Apollo.
 */
const MEDIA_TYPES = ['application/json', 'application/graphql-response+json', 'application/json;callbackSpec=1.0'];
const ANSWERED_TYPES = new Set(MEDIA_TYPES.slice(0, 2));

/** The media type of a successful answer for this `Accept`, or undefined when the fast path leaves it to Apollo. */
function mediaTypeFor(accept: string | undefined): string | undefined {
  if (accept === undefined || accept === '') return MEDIA_TYPES[0];
  const preferred = new Negotiator({ headers: { accept } }).mediaType(MEDIA_TYPES);
  return preferred !== undefined && ANSWERED_TYPES.has(preferred) ? preferred : undefined;
}

/**
 * Runs a query at once, before Apollo's per-request pipeline (the body's checks, hashing the text
 * for its document store, a dozen plugin hooks and promises), when everything about it is already
 * decided: its text passed the policy's gate and text checks in this request's preHandler, its
 * document passed the policy's validation rules when Apollo's route first ran it (they depend on
 * the text alone), and the policy's operation checks and coercion (`admitOperation`) pass for this
 * request's variables. The plan is the one the executor compiled for Apollo's route (or a trusted
 * document's, compiled at start). So the fast path decides nothing itself: every check is the
 * document policy's, and a check added there applies here too.
 *
 * It takes only the plain case: a POST whose JSON body holds `query`, `variables` and
 * `operationName` only (the gate has turned a trusted document's id into its text), a query
 * (mutations take Apollo's route), and an answer without errors. Anything else goes to Apollo's
 * route unchanged. An answer with errors is not run again: the executor hands the result to
 * Apollo's route, which writes and logs it as every other error (CompilingExecutor.handOver).
 */
export class FastPath {
  constructor(
    private readonly policy: Pick<DocumentPolicy, 'admitOperation'>,
    private readonly executor: Pick<CompilingExecutor, 'knownPlan' | 'runPlan' | 'handOver'>,
    private readonly contextFor: (request: FastifyRequest) => GraphQLContext,
    /** Counts the answers written here (GET /metrics shows it). */
    private readonly metrics: Pick<Metrics, 'fastPathAnswers'> = new Metrics(),
    /** With tracing on: a span around each operation, as the executor makes on Apollo's route. */
    private readonly tracing?: Pick<Tracing, 'operation'>,
  ) {}

  /** The answer's text when this request is answered here, else undefined (Apollo's route answers it). */
  async answer(request: FastifyRequest, reply: FastifyReply): Promise<string | undefined> {
    if (request.method !== 'POST') return undefined;
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
    const { query, variables, operationName, ...others } = body as Record<string, unknown>;
    if (typeof query !== 'string' || Object.keys(others).length > 0) return undefined;
    if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return undefined;
    if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return undefined;
    const trusted = request.trustedDocument;
    const known = trusted?.compiled ? { document: trusted.document, plan: trusted.compiled } : this.executor.knownPlan(query);
    if (!known) return undefined;
    const mediaType = mediaTypeFor(request.headers.accept);
    if (mediaType === undefined) return undefined;

    const admitted = this.policy.admitOperation('http', known.document, operationName, (variables ?? {}) as Record<string, unknown>);
    // Refused: Apollo's route answers, from the same checks.
    if ('errors' in admitted || admitted.operation.operation !== OperationTypeNode.QUERY) return undefined;
    const name = admitted.operation.name?.value ?? null;
    request.operationName = name;
    const run = () => this.executor.runPlan(known.plan, admitted.operation, this.contextFor(request), admitted.coerced);
    const result = this.tracing ? await this.tracing.operation(OperationTypeNode.QUERY, name, run) : await run();
    if (result.errors) {
      this.executor.handOver(request, query, result);
      return undefined;
    }
    this.metrics.fastPathAnswers.inc();
    void reply.type(`${mediaType}; charset=utf-8`);
    return JSON.stringify({ data: result.data });
  }
}

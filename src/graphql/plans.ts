import {
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
import type { DocumentEntry } from './document-cache';

/**
 * Compiling costs CPU, milliseconds for a document of a few KB (many aliases, nested fields). So
 * a document is compiled only when it is short and has run COMPILE_AFTER times on graphql-js: an
 * app's own queries are short and repeated, while a stream of distinct documents (an attacker's,
 * or one-off queries) never pays for compilation, and one sent again and again pays for it once
 * every COMPILE_AFTER requests at most.
 */
const MAX_COMPILED_LENGTH = 2048;
const COMPILE_AFTER = 10;
/**
 * Whether graphql-jit 0.8.9 answers this document as graphql-js does. Not when it holds:
 * - `@skip` or `@include`: graphql-jit records their conditions on the document's own field
 *   nodes and never clears them, so a fragment's other uses, and the document's other
 *   operations, took on the condition (`b: trainer { ...F }` came back `{}`);
 * - a variable inside a list or object literal (`filter: { team: $t }`): left out, it became
 *   null instead of absent, so the filter matched no one and a field's default was lost;
 * - more than one operation: one compiled query per document keeps the cache's bound a bound.
 */
function compilable(document: DocumentNode): boolean {
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
 * The variables a compiled query takes, from those the pipeline coerced. graphql-jit's own variable
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

/** graphql-jit's plan for a document, when it answers it as graphql-js does (see compilable). */
export function compile(schema: GraphQLSchema, document: DocumentNode): CompiledQuery | undefined {
  if (!compilable(document)) return undefined;
  const result = compileQuery(schema, document);
  return isCompiledQuery(result) ? result : undefined;
}

/**
 * The plan to run an entry by, counting this use: the one it has, or one compiled now that a short
 * document has run COMPILE_AFTER times; undefined while it runs on graphql-js. `planned` is told
 * when the entry gained a plan or lost its chance of one.
 */
export function planOf(schema: GraphQLSchema, entry: DocumentEntry, planned: () => void): CompiledQuery | undefined {
  if (entry.plan !== undefined) return entry.plan ?? undefined;
  if (!('document' in entry.verdict)) return undefined;
  const { document } = entry.verdict;
  if ((document.loc?.source.body.length ?? Infinity) > MAX_COMPILED_LENGTH) entry.plan = null;
  else if ((entry.uses += 1) < COMPILE_AFTER) return undefined;
  else entry.plan = compile(schema, document) ?? null;
  planned();
  return entry.plan ?? undefined;
}

/** Runs a plan with variables graphql-js coerced; its errors as graphql-js's (see asGraphQLError). */
export async function runPlan(
  schema: GraphQLSchema,
  plan: CompiledQuery,
  operation: OperationDefinitionNode,
  contextValue: object,
  coerced: Record<string, unknown>,
): Promise<ExecutionResult> {
  const result = (await plan.query(undefined, contextValue, compiledVariables(schema, operation, coerced))) as ExecutionResult;
  return result.errors ? { ...result, errors: result.errors.map(asGraphQLError) } : result;
}

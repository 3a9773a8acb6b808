import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import {
  BREAK,
  getVariableValues,
  GraphQLError,
  Kind,
  OperationTypeNode,
  parse,
  visit,
  type FieldNode,
  type OperationDefinitionNode,
  type SelectionNode,
  type DocumentNode,
  type GraphQLSchema,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import { getComplexity, simpleEstimator, type ComplexityEstimator } from 'graphql-query-complexity';
import { graphqlError } from './format-error';

/** The request limits of docs/api.md, "Limits". */
export const LIMITS = {
  depth: 8,
  aliases: 30,
  credentialFields: 1,
  cost: 5000,
  tokens: 1000,
  directives: 10,
  validationErrors: 10,
  /**
   * Fragment definitions per document. Validation's OverlappingFieldsCanBeMerged compares the
   * fields of every pair of fragments spread into one selection set, so its work grows with the
   * square of their number: 83 distinct fragments of `me { id }` (within the token limit) cost
   * several times any other shape. A frontend's document holds the fragments of its components,
   * a handful for a schema of this size.
   */
  fragments: 20,
  /** Characters of query text: 1,000 tokens fit in far less; the rest could only be comments and spaces. */
  queryLength: 32 * 1024,
} as const;

/** Mutations that check a password or a refresh token, or create an account: one per operation, so aliases cannot batch a brute force. */
const CREDENTIAL_FIELDS = new Set(['authenticate', 'refreshSession', 'registerTrainer', 'changePassword', 'deleteMe']);

/**
 * Counted per operation, as executed: a document may hold a `Register` and a `Login` operation
 * (only one runs per request), but one operation may not run two credential fields. Fields
 * reached through fragments count; two selections with the same response key are merged by
 * GraphQL into one execution, so they count once.
 */
const credentialFieldsRule: ValidationRule = (context) => ({
  OperationDefinition(operation) {
    if (operation.operation !== OperationTypeNode.MUTATION) return;
    const keys = new Map<string, FieldNode>();
    const seen = new Set<string>();
    const collect = (selections: readonly SelectionNode[]) => {
      for (const selection of selections) {
        if (selection.kind === Kind.FIELD) {
          if (CREDENTIAL_FIELDS.has(selection.name.value)) keys.set(selection.alias?.value ?? selection.name.value, selection);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          collect(selection.selectionSet.selections);
        } else if (!seen.has(selection.name.value)) {
          seen.add(selection.name.value);
          const fragment = context.getFragment(selection.name.value);
          if (fragment) collect(fragment.selectionSet.selections);
        }
      }
    };
    collect(operation.selectionSet.selections);
    if (keys.size > LIMITS.credentialFields) {
      context.reportError(
        new GraphQLError(
          `At most ${LIMITS.credentialFields} authenticate, refreshSession, registerTrainer, changePassword or deleteMe field per operation`,
          {
            nodes: [...keys.values()],
          },
        ),
      );
    }
  },
});

/**
 * Validation rules run on every operation before any resolver: graphql-armor's depth (through
 * fragments), alias and directive limits, and the one-credential-field rule. Depth counts
 * levels of selection the way the contract does: `{ me { id } }` is 2.
 */
export function limitRules(): ValidationRule[] {
  // Report as a validation error (400) rather than throw, which Apollo would take for a crash.
  const report = {
    exposeLimits: false,
    propagateOnRejection: false,
    onReject: [(context: ValidationContext | null, error: GraphQLError) => context?.reportError(error)],
  };
  return [
    maxDepthRule({ ...report, n: LIMITS.depth, flattenFragments: true, errorMessage: `Query depth is more than ${LIMITS.depth} levels` }),
    // allowList: graphql-armor leaves aliases of __typename uncounted by default; every alias counts here.
    maxAliasesRule({ ...report, n: LIMITS.aliases, allowList: [], errorMessage: `Query has more than ${LIMITS.aliases} aliases` }),
    maxDirectivesRule({ ...report, n: LIMITS.directives, errorMessage: `Query has more than ${LIMITS.directives} directives` }),
    credentialFieldsRule,
  ] as ValidationRule[];
}

/**
 * What a `nicknameContains` search adds to its list's cost: the database reads as many rows as the
 * text matches, which for a short text can be a large part of the registry, so a document holds
 * at most a few of them (30 aliased searches are refused).
 */
const SEARCH_COST = 250;

/**
 * A list field costs its `limit` times what one item costs, plus SEARCH_COST when it searches
 * nicknames; a subgraph's `_entities` (FEDERATION=true) costs as many items as it is sent
 * representations; every other field costs 1 plus its children.
 */
const listLimitEstimator: ComplexityEstimator = ({ args, childComplexity }) => {
  const representations: unknown = args.representations;
  if (Array.isArray(representations)) return representations.length * (1 + childComplexity);
  const limit: unknown = args.limit;
  if (typeof limit !== 'number') return undefined;
  const filter: unknown = args.filter;
  const searches =
    typeof filter === 'object' && filter !== null && typeof (filter as { nicknameContains?: unknown }).nicknameContains === 'string';
  return limit * (1 + childComplexity) + (searches ? SEARCH_COST : 0);
};

/**
 * The variables a document's cost can depend on: by value, those in `limit` and `filter`
 * arguments (a search costs more) and in directives (@skip/@include); by length, those in
 * `representations` (`_entities`). Every other variable (an id, an input) leaves the cost unchanged.
 */
function costVariables(document: DocumentNode): Pick<CostCache, 'variables' | 'lengths'> {
  const names = new Set<string>();
  const lengths = new Set<string>();
  const collect = (node: Parameters<typeof visit>[0], into: Set<string>) =>
    visit(node, {
      Variable(variable) {
        into.add(variable.name.value);
      },
    });
  visit(document, {
    Argument(argument) {
      if (argument.name.value === 'limit' || argument.name.value === 'filter') collect(argument.value, names);
      if (argument.name.value === 'representations') collect(argument.value, lengths);
    },
    Directive(directive) {
      for (const argument of directive.arguments ?? []) collect(argument.value, names);
    },
  });
  return { variables: [...names], lengths: [...lengths] };
}

/** Per parsed document (Apollo keeps one per query text): its cost variables and the costs measured. */
interface CostCache {
  readonly variables: string[];
  /** Variables whose length, not value, the cost depends on. */
  readonly lengths: string[];
  readonly costs: Map<string, number>;
  /** The cost of the document's last check that was within the limit, whatever its variables. */
  last?: number;
}
const MAX_COSTS_PER_DOCUMENT = 100;

/** The cost limit's check, and what it last measured of a document. */
export interface CostChecker {
  /** The error to answer when an operation costs too much, else undefined. */
  check(
    document: DocumentNode,
    operation: OperationDefinitionNode | undefined,
    operationName: string | undefined,
    given: Record<string, unknown>,
  ): GraphQLError | undefined;
  /** The cost `document` was last checked at and let through (with the variables of that request); undefined before. */
  lastCost(document: DocumentNode): number | undefined;
}

/**
 * The cost limit needs the variables (`limit: $n`), which validation rules do not see, so it runs
 * once the operation is resolved: still before any resolver. A document's cost is remembered for
 * the values of the variables it depends on: `trainer(id: $id)` is measured once, not per id
 * (measuring is a walk of the document, a visible part of a small query's CPU). The error to answer
 * when an operation costs too much, else undefined; asked by the Pipeline's operation checks.
 */
export function costChecker(schema: GraphQLSchema): CostChecker {
  const caches = new WeakMap<DocumentNode, CostCache>();
  const measure = (document: DocumentNode, variables: Record<string, unknown>, operationName: string | undefined): number => {
    try {
      return getComplexity({
        schema,
        query: document,
        variables,
        operationName,
        estimators: [listLimitEstimator, simpleEstimator({ defaultComplexity: 1 })],
      });
    } catch {
      // graphql-query-complexity gives up on documents it cannot measure (e.g. fragments that
      // spread each other into more than 10,000 nodes): refused, never let through unmeasured.
      return Number.POSITIVE_INFINITY;
    }
  };
  const check: CostChecker['check'] = (document, operation, operationName, given) => {
    let cache = caches.get(document);
    if (!cache) {
      cache = { ...costVariables(document), costs: new Map() };
      caches.set(document, cache);
    }
    const lengthOf = (value: unknown) => (Array.isArray(value) ? value.length : '~');
    const key =
      `${operationName ?? ''}|${cache.variables.map((name) => (name in given ? JSON.stringify(given[name]) : '~')).join(',')}` +
      `|${cache.lengths.map((name) => lengthOf(given[name])).join(',')}`;
    let cost = cache.costs.get(key);
    if (cost === undefined) {
      // Variables that do not fit their types: execution refuses them (BAD_USER_INPUT) before any resolver.
      const coerced = getVariableValues(schema, operation?.variableDefinitions ?? [], given, { maxErrors: 1 });
      if (coerced.errors) return undefined;
      cost = measure(document, coerced.coerced, operationName);
      if (cache.costs.size >= MAX_COSTS_PER_DOCUMENT) cache.costs.clear();
      cache.costs.set(key, cost);
    }
    if (cost <= LIMITS.cost) {
      // Only a cost that runs: one refused here (or not measurable) costs nothing beyond this check.
      cache.last = cost;
      return undefined;
    }
    const measured = Number.isFinite(cost) ? `would cost ${cost}` : 'is too large to measure';
    return graphqlError(
      'BAD_USER_INPUT',
      `This operation ${measured}, more than the limit of ${LIMITS.cost} (a list costs its limit times its items)`,
    );
  };
  return { check, lastCost: (document) => caches.get(document)?.last };
}

/** How often one response key, one fragment spread or one inline fragment may repeat in a selection set. */
const MAX_REPEATS = 3;

/**
 * Why a document must be refused before graphql-js validates it, or null. Validation's
 * OverlapFieldsCanBeMerged rule compares every pair of same-named fields, and the fields of every
 * pair of fragments spread together, so a few hundred copies of `me { id }`, within the token
 * limit, hold the thread for a long time. Repeating a field, a fragment spread or an
 * inline fragment more than MAX_REPEATS times in one selection set has no use (GraphQL merges
 * them into one), and more than LIMITS.fragments fragment definitions has none either, so such
 * documents are refused after a linear walk. Unparsable documents are left to the parser that
 * follows, which reports the syntax error. The Pipeline asks this of every text before it is parsed.
 */
export function repeatedSelections(query: string): string | null {
  let document: DocumentNode;
  try {
    document = parse(query, { maxTokens: LIMITS.tokens, noLocation: true });
  } catch {
    return null;
  }
  let fragments = 0;
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments += 1;
  if (fragments > LIMITS.fragments) return `The document defines more than ${LIMITS.fragments} fragments`;
  let verdict: string | null = null;
  visit(document, {
    SelectionSet(node) {
      if (verdict) return BREAK;
      const seen = new Map<string, number>();
      for (const selection of node.selections) {
        const key =
          selection.kind === Kind.FIELD
            ? `the field "${selection.alias?.value ?? selection.name.value}"`
            : selection.kind === Kind.FRAGMENT_SPREAD
              ? `the fragment "${selection.name.value}"`
              : `an inline fragment on "${selection.typeCondition?.name.value ?? '(its parent)'}"`;
        const count = (seen.get(key) ?? 0) + 1;
        seen.set(key, count);
        if (count > MAX_REPEATS) {
          verdict = `${key[0].toUpperCase()}${key.slice(1)} is selected more than ${MAX_REPEATS} times in one selection set`;
          return BREAK;
        }
      }
      return undefined;
    },
  });
  return verdict;
}

/** Verdicts a cache keeps at most: per argument class (field-resolvers.ts's valid arguments). */
export const MAX_VERDICTS = 1000;

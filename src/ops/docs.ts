import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { sharedSchemas } from '../rest/schemas';

declare module 'fastify' {
  interface FastifySchema {
    /** The route takes no body as well as one (see registerDocs). */
    'x-body-optional'?: boolean;
  }
}

/** Create, read, update, delete: the order of a path's operations in the document. */
const OPERATION_ORDER = ['post', 'get', 'put', 'patch', 'delete'];
const operationRank = (method: string) => {
  const rank = OPERATION_ORDER.indexOf(method);
  return rank === -1 ? OPERATION_ORDER.length : rank;
};

/** `record`'s keys, in place, in the order `compare` gives its entries. */
function reorder(record: object, compare: (a: [string, unknown], b: [string, unknown]) => number): void {
  const entries = Object.entries(record).sort(compare);
  for (const [key] of entries) Reflect.deleteProperty(record, key);
  for (const [key, value] of entries) Reflect.set(record, key, value);
}

const entriesOf = (value: unknown): [string, unknown][] => (typeof value === 'object' && value !== null ? Object.entries(value) : []);

/**
 * The paths by the document's tags (as Swagger UI groups them), then by path; a path's
 * operations in OPERATION_ORDER. So the document does not depend on the order in which the
 * routes happen to be registered (one plugin per resource, src/rest/plugin.ts).
 */
function putInDocumentOrder(paths: object, tags: readonly string[]): void {
  const tagRank = (item: unknown) => {
    const ranks = entriesOf(item).map(([, operation]) => {
      const first = entriesOf(operation).find(([key]) => key === 'tags')?.[1];
      const rank = tags.indexOf(Array.isArray(first) ? String(first[0]) : '');
      return rank === -1 ? tags.length : rank;
    });
    return Math.min(tags.length, ...ranks);
  };
  reorder(paths, ([a, itemA], [b, itemB]) => tagRank(itemA) - tagRank(itemB) || (a < b ? -1 : a > b ? 1 : 0));
  for (const [, item] of entriesOf(paths)) {
    if (typeof item === 'object' && item !== null) reorder(item, ([a], [b]) => operationRank(a) - operationRank(b));
  }
}

/**
 * OpenAPI 3.1 generated from the REST routes' schemas (only tagged routes: the shim), served at
 * /openapi.json, and Swagger UI at /docs from the package's own files, so it works offline.
 * Register before the routes so that they are collected.
 */
export async function registerDocs(app: FastifyInstance): Promise<void> {
  for (const schema of sharedSchemas) app.addSchema(schema);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Trainer and creature registry: REST shim',
        version: '1.0.0',
        description:
          'The legacy REST paths over the same service as the GraphQL API at /graphql. Errors are RFC 9457 problem details (application/problem+json) with a catalogue `code`.',
      },
      tags: [
        { name: 'trainers', description: 'Registration, authentication and reading trainers' },
        { name: 'creatures', description: "A trainer's creatures" },
      ],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      },
    },
    hideUntagged: true,
    // A route whose schema says `x-body-optional` takes no body as well as one (Fastify's schemas
    // cannot say so, and @fastify/swagger always marks a body schema required).
    transformObject: (documentObject) => {
      const document = 'openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject;
      if (document.paths)
        putInDocumentOrder(
          document.paths,
          (document.tags ?? []).map((tag) => tag.name),
        );
      const paths: unknown[] = Object.values(document.paths ?? {});
      for (const path of paths) {
        const operations: unknown[] = typeof path === 'object' && path !== null ? Object.values(path) : [];
        for (const operation of operations) {
          if (typeof operation !== 'object' || operation === null || !('x-body-optional' in operation)) continue;
          delete operation['x-body-optional'];
          if ('requestBody' in operation && typeof operation.requestBody === 'object' && operation.requestBody !== null) {
            Object.assign(operation.requestBody, { required: false });
          }
        }
      }
      return document;
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

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

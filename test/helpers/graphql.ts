import type { FastifyInstance } from 'fastify';

export interface GraphQLError {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; fields?: { field: string; message: string }[] };
}

export interface GraphQLResponse<T = Record<string, unknown>> {
  status: number;
  data?: T | null;
  errors?: GraphQLError[];
}

/** POSTs one GraphQL operation through the real HTTP stack (fastify.inject). */
// Test bodies are read field by field and asserted on, so a loose default type keeps them readable.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function gql<T = any>(
  app: FastifyInstance,
  query: string,
  variables?: Record<string, unknown>,
  token?: string,
): Promise<GraphQLResponse<T>> {
  const response = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    payload: JSON.stringify({ query, variables }),
  });
  const body = response.json<{ data?: T | null; errors?: GraphQLError[] }>();
  return { status: response.statusCode, data: body.data, errors: body.errors };
}

/** The single error code of a response that must have failed. */
export function errorCode(response: GraphQLResponse): string | undefined {
  expect(response.errors).toHaveLength(1);
  return response.errors![0].extensions?.code;
}

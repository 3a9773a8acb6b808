import type { FastifyInstance } from 'fastify';

export interface GraphQLError {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; fields?: { field: string; message: string }[] };
}

export interface GraphQLResponse<T = unknown> {
  status: number;
  data?: T | null;
  errors?: GraphQLError[];
}

/** A GraphQL answer's body as read off the wire (`res.json<GraphQLBody>()`). */
export interface GraphQLBody<T = unknown> {
  data?: T | null;
  errors?: (GraphQLError & { extensions?: { retryAfter?: number } })[];
}

/** An RFC 9457 problem as the REST shim writes it. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  fields?: { field: string; message: string }[];
}

/** A GraphQL document whose answer's `data` has the shape T: gql() then reads it typed. */
export type Document<T> = string & { readonly __data?: T };
export const document = <T>(text: string): Document<T> => text;

/** POSTs one GraphQL operation through the real HTTP stack (fastify.inject); `data` is typed by the document (unknown for a plain string). */
export async function gql<T = unknown>(
  app: FastifyInstance,
  query: Document<T>,
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

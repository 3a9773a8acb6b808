/**
 * Every REST path, written once. Routes register on these (what each path takes is the routes
 * it has: the 405 answers and the OpenAPI document are derived from them), and the links the
 * shim hands out (Location, Link) are built from them.
 */
export const paths = {
  trainers: '/trainer',
  authenticate: '/trainer/authenticate',
  refresh: '/trainer/authenticate/refresh',
  logout: '/trainer/logout',
  trainer: '/trainer/:trainerId',
  password: '/trainer/:trainerId/password',
  creatures: '/trainer/:trainerId/creature',
  creature: '/trainer/:trainerId/creature/:creatureId',
} as const;

/** The `:name` parameters of a path. */
type ParamsOf<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? Name | ParamsOf<`/${Rest}`>
  : P extends `${string}:${infer Name}`
    ? Name
    : never;

/** `path` with its parameters filled in: `pathTo(paths.trainer, { trainerId: 7 })` is `/trainer/7`. */
export function pathTo<P extends string>(path: P, params: Record<ParamsOf<P>, number>): string {
  const values: Record<string, number> = params;
  return path.replace(/:(\w+)/g, (_, name: string) => String(values[name]));
}

/** `path` as OpenAPI writes it: `/trainer/{trainerId}`. */
export function openApiPath(path: string): string {
  return path.replace(/:(\w+)/g, '{$1}');
}

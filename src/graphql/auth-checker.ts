import type { AuthChecker } from 'type-graphql';
import { unavailableAsAppError } from '../db/errors';
import type { GraphQLContext } from './context';

/** `@Authorized()` means "a valid token of an existing trainer"; ownership is the services' business. */
export const authChecker: AuthChecker<GraphQLContext> = async ({ context }) => {
  // type-graphql runs this before the global middlewares, so it maps database errors itself.
  await context.auth.requireViewer().catch((error: unknown) => {
    throw unavailableAsAppError(error);
  });
  return true;
};

import type { AuthChecker } from 'type-graphql';
import type { GraphQLContext } from './context';

/** `@Authorized()` means "a valid token of an existing trainer"; ownership is the services' business. */
export const authChecker: AuthChecker<GraphQLContext> = async ({ context }) => {
  await context.auth.requireViewer();
  return true;
};

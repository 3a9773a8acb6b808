import { createParameterDecorator } from 'type-graphql';
import type { GraphQLContext } from './context';

/** Injects the calling trainer, or fails with UNAUTHENTICATED. */
export function Viewer() {
  return createParameterDecorator<GraphQLContext>(({ context }) => context.auth.requireViewer());
}

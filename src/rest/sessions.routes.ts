import type { FastifyInstance } from 'fastify';
import type { Services } from '../services';
import { paths } from './paths';
import { presentFoundTrainer } from './present';
import { authenticateBody, authPayloadSchema, errorResponses, jsonResponse, logoutBody, refreshBody } from './schemas';

/** Sessions: logging in, refreshing a token pair, logging out. */
export async function sessionRoutes(app: FastifyInstance, { services }: { services: Services }): Promise<void> {
  /** A new session's payload with its trainer as that trainer sees it (with its count). */
  const withTrainer = async <T extends { trainer: { id: number } }>(auth: T) => {
    const id = auth.trainer.id;
    return { ...auth, trainer: presentFoundTrainer(await services.trainers.findFor(id, id, { withCount: true }), id, id) };
  };

  app.post<{ Body: { email: string; password: string } }>(
    paths.authenticate,
    {
      config: { auth: 'none' },
      schema: {
        tags: ['trainers'],
        summary: 'Exchange email and password for a token (authenticate)',
        body: authenticateBody,
        response: {
          200: jsonResponse(authPayloadSchema, 'A Bearer token and the trainer'),
          ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED'),
        },
      },
    },
    async (request) => withTrainer(await services.auth.authenticate(request.body.email, request.body.password, request.ip)),
  );

  app.post<{ Body: { refreshToken: string } }>(
    paths.refresh,
    {
      config: { auth: 'none' },
      schema: {
        tags: ['trainers'],
        summary: 'Exchange a refresh token for a new token pair (refreshSession); the token used stops working',
        description:
          'Each refresh token works once. Presenting one that was already used ends its whole session: every token of it stops working.',
        body: refreshBody,
        response: {
          200: jsonResponse(authPayloadSchema, 'A new access token and refresh token, and the trainer'),
          ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED'),
        },
      },
    },
    async (request) => withTrainer(await services.auth.refresh(request.body.refreshToken, request.ip)),
  );

  app.post<{ Body: { everywhere?: boolean } | undefined }>(
    paths.logout,
    {
      config: { auth: 'session' },
      // No body at all is the same as {}.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags: ['trainers'],
        summary: "End the caller's session, or with everywhere every session of the trainer (logout)",
        description: 'The refresh token and the access tokens of the ended sessions stop working at once. The body is optional.',
        'x-body-optional': true,
        body: logoutBody,
        response: {
          204: { description: 'Logged out', type: 'null' },
          ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'),
        },
      },
    },
    async (request, reply) => {
      await services.auth.logout(request.auth, request.body?.everywhere ?? false);
      return reply.code(204).send();
    },
  );
}

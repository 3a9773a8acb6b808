import type { Team } from '../trainers/team';
import type {} from '@fastify/swagger';
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { validateOrThrow } from '../common/validation';
import { CreateCreatureInput, UpdateCreatureInput } from '../creatures/creature.inputs';
import type { Services } from '../services';
import type { Trainer } from '../trainers/trainer.entity';
import { RegisterTrainerInput, UpdateTrainerInput } from '../trainers/trainer.inputs';
import { CONDITION_NAMES, conditionsOf, isNoCondition } from '../trainers/trainer-filter';
import { presentCreature, presentTrainer, presentTrainerPage } from './present';
import { AppError } from '../errors';
import {
  authenticateBody,
  authPayloadSchema,
  changePasswordBody,
  createCreatureBody,
  creatureParams,
  creaturePageSchema,
  deleteTrainerBody,
  errorResponses,
  logoutBody,
  pageQuery,
  refreshBody,
  registerBody,
  trainerListQuery,
  trainerPageSchema,
  trainerParams,
  updateCreatureBody,
  updateTrainerBody,
} from './schemas';
import { methodNotAllowed } from '../http/method-not-allowed';
import { noStore } from '../http/no-store';
import { attachRequestAuth } from '../auth/request-auth';
import { createRestValidatorCompiler } from './validation';

type Page = { limit: number; offset: number };
type TrainerListQuery = Page & { after?: string; nickname?: string; nicknameContains?: string; team?: Team };
type TrainerPath = { trainerId: number };
type CreaturePath = { trainerId: number; creatureId: number };

declare module 'fastify' {
  interface FastifyRequest {
    viewer: Trainer | null;
  }
}

const secured = [{ bearerAuth: [] }];
const json = (schema: unknown, description: string) => ({ description, content: { 'application/json': { schema } } });

/** The same value rules as GraphQL: the body is copied into the input class and checked by class-validator. */
async function validInput<T extends object>(Input: new () => T, body: unknown): Promise<T> {
  const input = Object.assign(new Input(), body);
  await validateOrThrow(input);
  return input;
}

/** What each path accepts; anything else is 405 with an Allow header. */
const PATHS: Record<string, string[]> = {
  '/trainer': ['GET', 'POST'],
  '/trainer/authenticate': ['POST'],
  '/trainer/authenticate/refresh': ['POST'],
  '/trainer/logout': ['POST'],
  '/trainer/:trainerId': ['GET', 'PATCH', 'DELETE'],
  '/trainer/:trainerId/password': ['POST'],
  '/trainer/:trainerId/creature': ['GET', 'POST'],
  '/trainer/:trainerId/creature/:creatureId': ['GET', 'PATCH', 'DELETE'],
};

/** What a route that checks the caller's password can answer besides its success (a wrong one counts as a failed login). */
const passwordCheckedErrors = errorResponses(
  'BAD_USER_INPUT',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'RATE_LIMITED',
);

/**
 * The REST shim for legacy clients: each handler parses, calls one service method, replies.
 * The caller is known the GraphQL way (request.auth, a RequestAuth); every rule lives in the services.
 */
export async function restRoutes(
  app: FastifyInstance,
  { services, requireDatabase }: { services: Services; requireDatabase: onRequestAsyncHookHandler },
): Promise<void> {
  app.addHook('onRequest', requireDatabase);
  app.addHook('onRequest', noStore);
  app.setValidatorCompiler(createRestValidatorCompiler());
  app.decorateRequest('viewer', null);

  app.addHook(
    'onRequest',
    attachRequestAuth((authorization, onKnown) => services.auth.forRequest(authorization, onKnown)),
  );
  /** Runs before the body is even parsed, so an anonymous caller learns nothing about its input. */
  const authenticate = async (request: FastifyRequest) => {
    request.viewer = await request.auth.requireViewer();
  };
  const viewerOf = (request: FastifyRequest): Trainer => request.viewer!;
  /** The token alone (no database), as early: the handler checks the caller alongside its own read. */
  const authenticateToken = async (request: FastifyRequest) => {
    request.auth.tokenId();
  };
  /** A trainer with its count as `viewerId` sees it; NOT_FOUND when there is no such trainer. */
  const trainerFor = async (viewerId: number, id: number) => {
    const trainer = await services.trainers.findFor(viewerId, id, { withCount: true });
    if (!trainer) throw new AppError('NOT_FOUND', `No trainer with id ${id}`);
    return presentTrainer(trainer, viewerId);
  };
  /**
   * For routes checked by authenticateToken, whose input is validated before any handler has
   * checked the caller (routes with `attachValidation`, whose handlers call this first when
   * `request.validationError` is set): a caller whose session has ended learns
   * that (401) before anything about its input, as on every other route. One round trip, on
   * refused input only.
   */
  const refuseInvalidInput = async (request: FastifyRequest, invalid: Error): Promise<never> => {
    await request.auth.requireViewer();
    throw invalid;
  };

  app.post<{ Body: RegisterTrainerInput }>(
    '/trainer',
    {
      // Before the body is parsed or validated: every attempt counts.
      onRequest: async (request) => services.trainers.countRegistration(request.ip),
      schema: {
        tags: ['trainers'],
        summary: 'Register a trainer (registerTrainer)',
        body: registerBody,
        response: {
          201: json({ $ref: 'Trainer#' }, 'The new trainer, with its email'),
          ...errorResponses('BAD_USER_INPUT', 'TRAINER_ALREADY_EXISTS', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED'),
        },
      },
    },
    async (request, reply) => {
      const trainer = await services.trainers.register(await validInput(RegisterTrainerInput, request.body));
      return reply.code(201).send(presentTrainer(trainer, trainer.id));
    },
  );

  app.post<{ Body: { email: string; password: string } }>(
    '/trainer/authenticate',
    {
      schema: {
        tags: ['trainers'],
        summary: 'Exchange email and password for a token (authenticate)',
        body: authenticateBody,
        response: {
          200: json(authPayloadSchema, 'A Bearer token and the trainer'),
          ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED'),
        },
      },
    },
    async (request) => {
      const auth = await services.auth.authenticate(request.body.email, request.body.password, request.ip);
      return { ...auth, trainer: await trainerFor(auth.trainer.id, auth.trainer.id) };
    },
  );

  app.post<{ Body: { refreshToken: string } }>(
    '/trainer/authenticate/refresh',
    {
      schema: {
        tags: ['trainers'],
        summary: 'Exchange a refresh token for a new token pair (refreshSession); the token used stops working',
        description:
          'Each refresh token works once. Presenting one that was already used ends its whole session: every token of it stops working.',
        body: refreshBody,
        response: {
          200: json(authPayloadSchema, 'A new access token and refresh token, and the trainer'),
          ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED'),
        },
      },
    },
    async (request) => {
      const auth = await services.auth.refresh(request.body.refreshToken, request.ip);
      return { ...auth, trainer: await trainerFor(auth.trainer.id, auth.trainer.id) };
    },
  );

  app.post<{ Body: { everywhere?: boolean } | undefined }>(
    '/trainer/logout',
    {
      onRequest: authenticate,
      // No body at all is the same as {}.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags: ['trainers'],
        summary: "End the caller's session, or with everywhere every session of the trainer (logout)",
        description: 'The refresh token and the access tokens of the ended sessions stop working at once. The body is optional.',
        security: secured,
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

  app.get<{ Querystring: TrainerListQuery }>(
    '/trainer',
    {
      onRequest: authenticateToken,
      // An empty search value (`?nickname=`, an empty search box) is no condition (isNoCondition),
      // as if left out: gone before the schema checks the values given.
      preValidation: async (request) => {
        const query = request.query as Record<string, unknown>;
        for (const name of CONDITION_NAMES) if (isNoCondition(query[name])) delete query[name];
      },
      attachValidation: true,
      schema: {
        tags: ['trainers'],
        summary: 'A page of trainers (trainers)',
        security: secured,
        querystring: trainerListQuery,
        response: {
          200: {
            description: 'A page of trainers; when another follows, a Link header names it (rel="next")',
            headers: { Link: { type: 'string', description: '</trainer?...&after=...>; rel="next"' } },
            content: { 'application/json': { schema: trainerPageSchema } },
          },
          ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED'),
        },
      },
    },
    async (request, reply) => {
      if (request.validationError) return refuseInvalidInput(request, request.validationError);
      const { limit, offset, after, nickname, nicknameContains, team } = request.query;
      const filter = conditionsOf({ nickname, nicknameContains, team });
      const page = await request.auth.alongside(async (viewerId) =>
        presentTrainerPage(await services.trainers.pageWithCount(limit, offset, { after, filter }), limit, offset, viewerId),
      );
      if (page.nextCursor !== null) {
        // A cursor is URL-safe already (base64url and a dot); filter values are encoded.
        let next = `limit=${limit}&after=${page.nextCursor}`;
        for (const name of CONDITION_NAMES) {
          const value = filter[name];
          if (value !== undefined) next += `&${name}=${encodeURIComponent(value)}`;
        }
        reply.header('link', `</trainer?${next}>; rel="next"`);
      }
      return page;
    },
  );

  app.get<{ Params: TrainerPath }>(
    '/trainer/:trainerId',
    {
      onRequest: authenticateToken,
      attachValidation: true,
      schema: {
        tags: ['trainers'],
        summary: 'A trainer by id (trainer)',
        security: secured,
        params: trainerParams,
        response: { 200: json({ $ref: 'Trainer#' }, 'The trainer'), ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED', 'NOT_FOUND') },
      },
    },
    async (request) => {
      if (request.validationError) return refuseInvalidInput(request, request.validationError);
      return request.auth.alongside((viewerId) => trainerFor(viewerId, request.params.trainerId));
    },
  );

  app.patch<{ Params: TrainerPath; Body: UpdateTrainerInput }>(
    '/trainer/:trainerId',
    {
      onRequest: authenticate,
      schema: {
        tags: ['trainers'],
        summary: "Change the calling trainer's nickname, names or team (updateMe)",
        description:
          'A partial update: fields left out stay as they are; at least one. Only the trainer itself (FORBIDDEN otherwise). Takes application/json or application/merge-patch+json.',
        security: secured,
        consumes: ['application/json', 'application/merge-patch+json'],
        params: trainerParams,
        body: updateTrainerBody,
        response: {
          200: json({ $ref: 'Trainer#' }, 'The trainer as it now is, with its email'),
          ...errorResponses(
            'BAD_USER_INPUT',
            'UNAUTHENTICATED',
            'FORBIDDEN',
            'TRAINER_ALREADY_EXISTS',
            'PAYLOAD_TOO_LARGE',
            'UNSUPPORTED_MEDIA_TYPE',
          ),
        },
      },
    },
    async (request) => {
      const change = await validInput(UpdateTrainerInput, request.body);
      const trainer = await services.accounts.update(request.auth, change, request.log, request.params.trainerId);
      return presentTrainer(trainer, trainer.id);
    },
  );

  app.post<{ Params: TrainerPath; Body: { currentPassword: string; newPassword: string } }>(
    '/trainer/:trainerId/password',
    {
      onRequest: authenticate,
      schema: {
        tags: ['trainers'],
        summary: "Change the calling trainer's password (changePassword)",
        description:
          "Every other session of the trainer ends at once (its access and refresh tokens are refused, its sockets close); the caller's session goes on. A wrong currentPassword is BAD_USER_INPUT and counts as a failed login.",
        security: secured,
        params: trainerParams,
        body: changePasswordBody,
        response: {
          204: { description: 'Changed', type: 'null' },
          ...passwordCheckedErrors,
        },
      },
    },
    async (request, reply) => {
      const { currentPassword, newPassword } = request.body;
      await services.accounts.changePassword(request.auth, currentPassword, newPassword, request.ip, request.log, request.params.trainerId);
      return reply.code(204).send();
    },
  );

  app.delete<{ Params: TrainerPath; Body: { password: string } }>(
    '/trainer/:trainerId',
    {
      onRequest: authenticate,
      schema: {
        tags: ['trainers'],
        summary: 'Delete the calling trainer with its creatures and sessions (deleteMe)',
        description:
          'Needs the password (a wrong one is BAD_USER_INPUT and counts as a failed login; nothing is removed). Every token of the trainer is refused at once; its nickname and email can be registered again.',
        security: secured,
        params: trainerParams,
        body: deleteTrainerBody,
        response: {
          204: { description: 'Deleted', type: 'null' },
          ...passwordCheckedErrors,
        },
      },
    },
    async (request, reply) => {
      await services.accounts.deleteMe(request.auth, request.body.password, request.ip, request.log, request.params.trainerId);
      return reply.code(204).send();
    },
  );

  app.post<{ Params: TrainerPath; Body: CreateCreatureInput }>(
    '/trainer/:trainerId/creature',
    {
      onRequest: authenticate,
      schema: {
        tags: ['creatures'],
        summary: 'Create a creature for the calling trainer (createCreature)',
        security: secured,
        params: trainerParams,
        body: createCreatureBody,
        response: {
          201: {
            description: 'The new creature; Location names it',
            headers: { Location: { type: 'string', description: '/trainer/{trainerId}/creature/{creatureId}' } },
            content: { 'application/json': { schema: { $ref: 'Creature#' } } },
          },
          ...errorResponses(
            'BAD_USER_INPUT',
            'UNAUTHENTICATED',
            'FORBIDDEN',
            'DUPLICATE_CREATURE',
            'PAYLOAD_TOO_LARGE',
            'UNSUPPORTED_MEDIA_TYPE',
          ),
        },
      },
    },
    async (request, reply) => {
      const input = await validInput(CreateCreatureInput, request.body);
      const creature = await services.creatures.create(viewerOf(request), request.params.trainerId, input);
      return reply.code(201).header('location', `/trainer/${creature.trainerId}/creature/${creature.id}`).send(presentCreature(creature));
    },
  );

  app.get<{ Params: TrainerPath; Querystring: Page }>(
    '/trainer/:trainerId/creature',
    {
      onRequest: authenticate,
      schema: {
        tags: ['creatures'],
        summary: "A page of a trainer's creatures (Trainer.creatures)",
        security: secured,
        params: trainerParams,
        querystring: pageQuery,
        response: {
          200: json(creaturePageSchema, "A page of the trainer's creatures"),
          ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED', 'NOT_FOUND'),
        },
      },
    },
    async (request) => {
      const page = await services.creatures.pageOfTrainer(
        request.params.trainerId,
        request.query.limit,
        request.query.offset,
        request.auth.tokenId(),
      );
      return { ...page, items: page.items.map(presentCreature) };
    },
  );

  app.get<{ Params: CreaturePath }>(
    '/trainer/:trainerId/creature/:creatureId',
    {
      onRequest: authenticate,
      schema: {
        tags: ['creatures'],
        summary: 'One creature of a trainer (creature)',
        security: secured,
        params: creatureParams,
        response: { 200: json({ $ref: 'Creature#' }, 'The creature'), ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED', 'NOT_FOUND') },
      },
    },
    async (request) =>
      presentCreature(await services.creatures.getOfTrainer(request.params.trainerId, request.params.creatureId, request.auth.tokenId())),
  );

  app.patch<{ Params: CreaturePath; Body: UpdateCreatureInput }>(
    '/trainer/:trainerId/creature/:creatureId',
    {
      onRequest: authenticate,
      schema: {
        tags: ['creatures'],
        summary: "Rename or re-level one of the calling trainer's creatures (updateCreature)",
        description: 'A partial update: fields left out stay as they are. Takes application/json or application/merge-patch+json.',
        security: secured,
        consumes: ['application/json', 'application/merge-patch+json'],
        params: creatureParams,
        body: updateCreatureBody,
        response: {
          200: json({ $ref: 'Creature#' }, 'The creature as it now is'),
          ...errorResponses(
            'BAD_USER_INPUT',
            'UNAUTHENTICATED',
            'FORBIDDEN',
            'NOT_FOUND',
            'DUPLICATE_CREATURE',
            'PAYLOAD_TOO_LARGE',
            'UNSUPPORTED_MEDIA_TYPE',
          ),
        },
      },
    },
    async (request) => {
      const change = await validInput(UpdateCreatureInput, request.body);
      return presentCreature(
        await services.creatures.update(viewerOf(request), request.params.creatureId, change, request.params.trainerId),
      );
    },
  );

  app.delete<{ Params: CreaturePath }>(
    '/trainer/:trainerId/creature/:creatureId',
    {
      onRequest: authenticate,
      schema: {
        tags: ['creatures'],
        summary: "Delete one of the calling trainer's creatures (deleteCreature)",
        security: secured,
        params: creatureParams,
        response: {
          204: { description: 'Deleted', type: 'null' },
          ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND'),
        },
      },
    },
    async (request, reply) => {
      await services.creatures.delete(viewerOf(request), request.params.creatureId, request.params.trainerId);
      return reply.code(204).send();
    },
  );

  for (const [url, allowed] of Object.entries(PATHS)) methodNotAllowed(app, url, allowed);
}

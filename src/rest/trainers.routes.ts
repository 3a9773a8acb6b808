import type { FastifyInstance } from 'fastify';
import type { Services } from '../services';
import type { Team } from '../trainers/team';
import { RegisterTrainerInput } from '../trainers/trainer.inputs';
import { CONDITION_NAMES, conditionsOf, isNoCondition } from '../trainers/trainer-filter';
import { paths } from './paths';
import { nextTrainersLink, presentFoundTrainer, presentTrainer, presentTrainerPage } from './present';
import { errorResponses, jsonResponse, registerBody, trainerListQuery, trainerPageSchema, trainerParams } from './schemas';
import { validInput } from './validation';

type TrainerListQuery = { limit: number; offset: number; after?: string; nickname?: string; nicknameContains?: string; team?: Team };

/** Trainers: registering one, a page of them, one by id. */
export async function trainerRoutes(app: FastifyInstance, { services }: { services: Services }): Promise<void> {
  app.post<{ Body: RegisterTrainerInput }>(
    paths.trainers,
    {
      config: { auth: 'none' },
      // Before the body is parsed or validated: every attempt counts.
      onRequest: async (request) => services.trainers.countRegistration(request.ip),
      schema: {
        tags: ['trainers'],
        summary: 'Register a trainer (registerTrainer)',
        body: registerBody,
        response: {
          201: jsonResponse({ $ref: 'Trainer#' }, 'The new trainer, with its email'),
          ...errorResponses('BAD_USER_INPUT', 'TRAINER_ALREADY_EXISTS', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED'),
        },
      },
    },
    async (request, reply) => {
      const trainer = await services.trainers.register(await validInput(RegisterTrainerInput, request.body));
      return reply.code(201).send(presentTrainer(trainer, trainer.id));
    },
  );

  app.get<{ Querystring: TrainerListQuery }>(
    paths.trainers,
    {
      config: { auth: 'token' },
      // An empty search value (`?nickname=`, an empty search box) is no condition (isNoCondition),
      // as if left out: gone before the schema checks the values given.
      preValidation: async (request) => {
        const query = request.query as Record<string, unknown>;
        for (const name of CONDITION_NAMES) if (isNoCondition(query[name])) delete query[name];
      },
      schema: {
        tags: ['trainers'],
        summary: 'A page of trainers (trainers)',
        querystring: trainerListQuery,
        response: {
          200: {
            description: 'A page of trainers; when another follows, a Link header names it (rel="next")',
            headers: { Link: { type: 'string', description: `<${paths.trainers}?...&after=...>; rel="next"` } },
            content: { 'application/json': { schema: trainerPageSchema } },
          },
          ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED'),
        },
      },
    },
    async (request, reply) => {
      const { limit, offset, after, nickname, nicknameContains, team } = request.query;
      const filter = conditionsOf({ nickname, nicknameContains, team });
      const page = await request.auth.alongside(async (viewerId) =>
        presentTrainerPage(await services.trainers.pageWithCount(limit, offset, { after, filter }), limit, offset, viewerId),
      );
      const next = nextTrainersLink(page, filter);
      if (next !== undefined) reply.header('link', next);
      return page;
    },
  );

  app.get<{ Params: { trainerId: number } }>(
    paths.trainer,
    {
      config: { auth: 'token' },
      schema: {
        tags: ['trainers'],
        summary: 'A trainer by id (trainer)',
        params: trainerParams,
        response: {
          200: jsonResponse({ $ref: 'Trainer#' }, 'The trainer'),
          ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED', 'NOT_FOUND'),
        },
      },
    },
    async (request) => {
      const id = request.params.trainerId;
      return request.auth.alongside(async (viewerId) =>
        presentFoundTrainer(await services.trainers.findFor(viewerId, id, { withCount: true }), id, viewerId),
      );
    },
  );
}

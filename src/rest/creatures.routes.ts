import type { FastifyInstance } from 'fastify';
import { CreateCreatureInput, UpdateCreatureInput } from '../creatures/creature.inputs';
import type { Services } from '../services';
import { openApiPath, pathTo, paths } from './paths';
import { nextPageLink, presentCreature } from './present';
import {
  createCreatureBody,
  creaturePageSchema,
  creatureParams,
  errorResponses,
  jsonResponse,
  cursorPageQuery,
  trainerParams,
  updateCreatureBody,
} from './schemas';
import { validInput } from './validation';

type TrainerPath = { trainerId: number };
type CreaturePath = { trainerId: number; creatureId: number };

/** A trainer's creatures: creating one, a page of them, one by id, changing and deleting one. */
export async function creatureRoutes(app: FastifyInstance, { services }: { services: Services }): Promise<void> {
  app.post<{ Params: TrainerPath; Body: CreateCreatureInput }>(
    paths.creatures,
    {
      config: { auth: 'session' },
      schema: {
        tags: ['creatures'],
        summary: 'Create a creature for the calling trainer (createCreature)',
        params: trainerParams,
        body: createCreatureBody,
        response: {
          201: {
            description: 'The new creature; Location names it',
            headers: { Location: { type: 'string', description: openApiPath(paths.creature) } },
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
      const creature = await services.creatures.create(await request.auth.requireViewer(), request.params.trainerId, input);
      return reply
        .code(201)
        .header('location', pathTo(paths.creature, { trainerId: creature.trainerId, creatureId: creature.id }))
        .send(presentCreature(creature));
    },
  );

  app.get<{ Params: TrainerPath; Querystring: { limit: number; offset: number; after?: string } }>(
    paths.creatures,
    {
      config: { auth: 'session' },
      schema: {
        tags: ['creatures'],
        summary: "A page of a trainer's creatures (Trainer.creatures, Trainer.creaturePage)",
        params: trainerParams,
        querystring: cursorPageQuery,
        response: {
          200: {
            description: 'A page of the trainer\'s creatures; when another follows, a Link header names it (rel="next")',
            headers: { Link: { type: 'string', description: `<${paths.creatures}?limit=...&after=...>; rel="next"` } },
            content: { 'application/json': { schema: creaturePageSchema } },
          },
          ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED', 'NOT_FOUND'),
        },
      },
    },
    async (request, reply) => {
      const { limit, offset, after } = request.query;
      const { trainerId } = request.params;
      const page = await services.creatures.pageOfTrainer(trainerId, { limit, offset, after }, request.auth.tokenId());
      const next = nextPageLink(pathTo(paths.creatures, { trainerId }), page);
      if (next !== undefined) reply.header('link', next);
      return { items: page.items.map(presentCreature), totalCount: page.totalCount, limit, offset, nextCursor: page.nextCursor };
    },
  );

  app.get<{ Params: CreaturePath }>(
    paths.creature,
    {
      config: { auth: 'session' },
      schema: {
        tags: ['creatures'],
        summary: 'One creature of a trainer (creature)',
        params: creatureParams,
        response: {
          200: jsonResponse({ $ref: 'Creature#' }, 'The creature'),
          ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED', 'NOT_FOUND'),
        },
      },
    },
    async (request) =>
      presentCreature(await services.creatures.getOfTrainer(request.params.trainerId, request.params.creatureId, request.auth.tokenId())),
  );

  app.patch<{ Params: CreaturePath; Body: UpdateCreatureInput }>(
    paths.creature,
    {
      config: { auth: 'session' },
      schema: {
        tags: ['creatures'],
        summary: "Rename or re-level one of the calling trainer's creatures (updateCreature)",
        description: 'A partial update: fields left out stay as they are. Takes application/json or application/merge-patch+json.',
        consumes: ['application/json', 'application/merge-patch+json'],
        params: creatureParams,
        body: updateCreatureBody,
        response: {
          200: jsonResponse({ $ref: 'Creature#' }, 'The creature as it now is'),
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
      const { trainerId, creatureId } = request.params;
      return presentCreature(await services.creatures.update(await request.auth.requireViewer(), creatureId, change, trainerId));
    },
  );

  app.delete<{ Params: CreaturePath }>(
    paths.creature,
    {
      config: { auth: 'session' },
      schema: {
        tags: ['creatures'],
        summary: "Delete one of the calling trainer's creatures (deleteCreature)",
        params: creatureParams,
        response: {
          204: { description: 'Deleted', type: 'null' },
          ...errorResponses('BAD_USER_INPUT', 'UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND'),
        },
      },
    },
    async (request, reply) => {
      const { trainerId, creatureId } = request.params;
      await services.creatures.delete(await request.auth.requireViewer(), creatureId, trainerId);
      return reply.code(204).send();
    },
  );
}

import type { FastifyInstance } from 'fastify';
import type { Services } from '../services';
import { UpdateTrainerInput } from '../trainers/trainer.inputs';
import { paths } from './paths';
import { presentTrainer } from './present';
import { changePasswordBody, deleteTrainerBody, errorResponses, jsonResponse, trainerParams, updateTrainerBody } from './schemas';
import { validInput } from './validation';

type TrainerPath = { trainerId: number };

/** What a route that checks the caller's password can answer besides its success (a wrong one counts as a failed login). */
const passwordCheckedErrors = errorResponses(
  'BAD_USER_INPUT',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'RATE_LIMITED',
);

/** The calling trainer's own account: changing it, its password, deleting it. */
export async function accountRoutes(app: FastifyInstance, { services }: { services: Services }): Promise<void> {
  app.patch<{ Params: TrainerPath; Body: UpdateTrainerInput }>(
    paths.trainer,
    {
      config: { auth: 'session' },
      schema: {
        tags: ['trainers'],
        summary: "Change the calling trainer's nickname, names or team (updateMe)",
        description:
          'A partial update: fields left out stay as they are; at least one. Only the trainer itself (FORBIDDEN otherwise). Takes application/json or application/merge-patch+json.',
        consumes: ['application/json', 'application/merge-patch+json'],
        params: trainerParams,
        body: updateTrainerBody,
        response: {
          200: jsonResponse({ $ref: 'Trainer#' }, 'The trainer as it now is, with its email'),
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
    paths.password,
    {
      config: { auth: 'session' },
      schema: {
        tags: ['trainers'],
        summary: "Change the calling trainer's password (changePassword)",
        description:
          "Every other session of the trainer ends at once (its access and refresh tokens are refused, its sockets close); the caller's session goes on. A wrong currentPassword is BAD_USER_INPUT and counts as a failed login.",
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
    paths.trainer,
    {
      config: { auth: 'session' },
      schema: {
        tags: ['trainers'],
        summary: 'Delete the calling trainer with its creatures and sessions (deleteMe)',
        description:
          'Needs the password (a wrong one is BAD_USER_INPUT and counts as a failed login; nothing is removed). Every token of the trainer is refused at once; its nickname and email can be registered again.',
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
}

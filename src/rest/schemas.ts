import { DEFAULT_LIMIT, MAX_CURSOR_LENGTH, MAX_LIMIT, OFFSET_RULE } from '../common/args';
import { EMAIL_PATTERN, MAX_EMAIL, MAX_PASSWORD, MIN_PASSWORD, namePattern, NICKNAME_PATTERN, PASSWORD_PATTERN } from '../common/rules';
import { EMAIL_RULE, MAX_ID, nameRule, NICKNAME_RULE, PASSWORD_RULE } from '../common/validation';
import { MAX_CREATURE_NAME } from '../creatures/creature.entity';
import { TRAINER_COLUMNS, type TrainerColumnProperty } from '../trainers/trainer.columns';
import { MAX_TRAINER_NAME } from '../trainers/trainer.entity';
import { NICKNAME_PART_PATTERN, NICKNAME_PART_RULE } from '../trainers/trainer-filter';
import { MAX_LEVEL, MAX_SPECIES_ID } from '../creatures/creature.inputs';
import { ERROR_STATUS, type ErrorCode } from '../errors';
import { Team } from '../trainers/team';

/*
 * JSON schemas of the REST shim: Fastify validates requests with them, serializes responses
 * through them (a field not listed here can never leave the server), and @fastify/swagger
 * turns them into openapi.json. Request schemas state every rule of a value (ranges, lengths,
 * patterns from common/rules.ts, no unknown fields), so that a request generated from
 * openapi.json is accepted; the GraphQL inputs' class-validator classes check the same patterns
 * and bounds, so both transports accept and refuse exactly the same values.
 */

/** A name's schema: its pattern carries the length (surrounding spaces do not count). */
const name = (max: number) =>
  ({ type: 'string', minLength: 1, pattern: namePattern(max), description: `${nameRule(max)}; stored trimmed, in Unicode NFC` }) as const;

const id = { type: 'integer', minimum: 1, maximum: MAX_ID } as const;
const dateTime = { type: 'string', format: 'date-time', description: 'ISO-8601, UTC' } as const;
const team = { type: 'string', enum: Object.values(Team) } as const;

/** Each public column's schema, as a trainer in an answer has it (the compiler asks for a new column's). */
const trainerProperty: { readonly [P in TrainerColumnProperty]: object } = {
  id,
  nickname: { type: 'string' },
  firstName: { type: 'string' },
  lastName: { type: 'string' },
  email: { type: 'string', format: 'email' },
  team,
  creaturesOwned: { type: 'integer', minimum: 0 },
  createdAt: dateTime,
};

/** A trainer as presentTrainer shows it: the public columns in their order; those only the trainer itself sees may be absent. */
const trainerSchema = {
  $id: 'Trainer',
  type: 'object',
  description: 'A registered trainer. `email` is present only when the trainer is the caller.',
  required: TRAINER_COLUMNS.filter((column) => column.shown === 'everyone').map((column) => column.property),
  properties: Object.fromEntries(TRAINER_COLUMNS.map((column) => [column.property, trainerProperty[column.property]])),
  additionalProperties: false,
} as const;

const creatureSchema = {
  $id: 'Creature',
  type: 'object',
  required: ['id', 'name', 'speciesId', 'level', 'trainerId', 'createdAt'],
  properties: {
    id,
    name: { type: 'string' },
    speciesId: { type: 'integer', minimum: 1, maximum: MAX_SPECIES_ID },
    level: { type: 'integer', minimum: 1, maximum: MAX_LEVEL },
    trainerId: id,
    createdAt: dateTime,
  },
  additionalProperties: false,
} as const;

const problemSchema = {
  $id: 'Problem',
  type: 'object',
  description: 'RFC 9457 problem details, served as application/problem+json.',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    code: { type: 'string', enum: Object.keys(ERROR_STATUS) },
    fields: {
      type: 'array',
      items: {
        type: 'object',
        required: ['field', 'message'],
        properties: { field: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
} as const;

export const sharedSchemas = [trainerSchema, creatureSchema, problemSchema];

/** A page of `ref`s with its total (what `totalCount` counts) and the cursor of the page that follows. */
const pageOf = (ref: string, description: string, counted: string, things: string) =>
  ({
    type: 'object',
    description,
    required: ['items', 'totalCount', 'limit', 'offset', 'nextCursor'],
    properties: {
      items: { type: 'array', items: { $ref: `${ref}#` } },
      totalCount: { type: 'integer', minimum: 0, description: counted },
      limit: { type: 'integer' },
      offset: { type: 'integer' },
      nextCursor: {
        type: ['string', 'null'],
        description: `Pass as \`after\` for the page that follows (also in the Link header, rel="next"); null when no ${things} follows`,
      },
    },
    additionalProperties: false,
  }) as const;

export const trainerPageSchema = pageOf(
  'Trainer',
  'One page of trainers, ordered by id ascending.',
  'How many trainers match the filter (all trainers without one)',
  'trainer',
);
export const creaturePageSchema = pageOf(
  'Creature',
  "One page of a trainer's creatures, oldest first.",
  'How many creatures the trainer has',
  'creature',
);

const pageQuery = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
    // No maximum here: MAX_OFFSET is a setting, checked by the services (checkOffset).
    offset: { type: 'integer', minimum: 0, default: 0, description: `${OFFSET_RULE}; above it, BAD_USER_INPUT` },
  },
} as const;

/** A page by offset or by cursor (`after`), as trainer and creature lists take it. */
export const cursorPageQuery = {
  type: 'object',
  properties: {
    ...pageQuery.properties,
    offset: {
      ...pageQuery.properties.offset,
      description: `${OFFSET_RULE}; above it, BAD_USER_INPUT: read further by following nextCursor (after, or the Link header)`,
    },
    after: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_CURSOR_LENGTH,
      description: 'A nextCursor from an earlier page; offset must then be 0',
    },
  },
} as const;

export const trainerListQuery = {
  type: 'object',
  properties: {
    ...cursorPageQuery.properties,
    nickname: {
      type: 'string',
      description: 'Exactly this nickname, compared case-insensitively; one outside the nickname rules matches nobody; empty: no condition',
    },
    nicknameContains: {
      type: 'string',
      pattern: NICKNAME_PART_PATTERN,
      minLength: 2,
      maxLength: 32,
      description: `Nicknames containing this text, case-insensitively: ${NICKNAME_PART_RULE}; empty: no condition`,
    },
    team: { ...team, description: 'One team; empty: no condition' },
  },
  additionalProperties: false,
} as const;

export const trainerParams = {
  type: 'object',
  required: ['trainerId'],
  properties: { trainerId: id },
} as const;

export const creatureParams = {
  type: 'object',
  required: ['trainerId', 'creatureId'],
  properties: { trainerId: id, creatureId: id },
} as const;

export const registerBody = {
  type: 'object',
  required: ['nickname', 'firstName', 'lastName', 'email', 'password', 'team'],
  properties: {
    nickname: {
      type: 'string',
      minLength: 3,
      maxLength: 32,
      pattern: NICKNAME_PATTERN,
      description: `${NICKNAME_RULE}; unique, case-insensitively`,
    },
    firstName: name(MAX_TRAINER_NAME),
    lastName: name(MAX_TRAINER_NAME),
    email: {
      type: 'string',
      minLength: 3,
      maxLength: MAX_EMAIL,
      pattern: EMAIL_PATTERN,
      description: `${EMAIL_RULE}; unique, stored lower-cased`,
    },
    password: { type: 'string', minLength: MIN_PASSWORD, maxLength: MAX_PASSWORD, pattern: PASSWORD_PATTERN, description: PASSWORD_RULE },
    team,
  },
  additionalProperties: false,
} as const;

export const updateTrainerBody = {
  type: 'object',
  description:
    'What to change: at least one of nickname, firstName, lastName and team; what is left out stays as it is. email and password are not changed here.',
  minProperties: 1,
  properties: {
    nickname: registerBody.properties.nickname,
    firstName: registerBody.properties.firstName,
    lastName: registerBody.properties.lastName,
    team,
  },
  additionalProperties: false,
} as const;

export const changePasswordBody = {
  type: 'object',
  required: ['currentPassword', 'newPassword'],
  properties: {
    currentPassword: { type: 'string', description: 'The password now in force; a wrong one counts as a failed login' },
    newPassword: registerBody.properties.password,
  },
  additionalProperties: false,
} as const;

export const deleteTrainerBody = {
  type: 'object',
  required: ['password'],
  properties: { password: { type: 'string', description: "The trainer's password; a wrong one counts as a failed login" } },
  additionalProperties: false,
} as const;

export const authenticateBody = {
  type: 'object',
  required: ['email', 'password'],
  properties: { email: { type: 'string' }, password: { type: 'string' } },
  additionalProperties: false,
} as const;

export const createCreatureBody = {
  type: 'object',
  required: ['name', 'speciesId'],
  properties: {
    name: {
      ...name(MAX_CREATURE_NAME),
      description: `${nameRule(MAX_CREATURE_NAME)}; unique per trainer, compared after NFKC and full case folding`,
    },
    speciesId: { type: 'integer', minimum: 1, maximum: MAX_SPECIES_ID },
    level: { type: 'integer', minimum: 1, maximum: MAX_LEVEL, default: 1 },
  },
  additionalProperties: false,
} as const;

export const updateCreatureBody = {
  type: 'object',
  description: 'What to change: at least one of name and level; what is left out stays as it is.',
  minProperties: 1,
  properties: {
    name: createCreatureBody.properties.name,
    level: { type: 'integer', minimum: 1, maximum: MAX_LEVEL },
  },
  additionalProperties: false,
} as const;

export const refreshBody = {
  type: 'object',
  required: ['refreshToken'],
  properties: { refreshToken: { type: 'string', description: 'The refreshToken of the last answer of authenticate or refresh' } },
  additionalProperties: false,
} as const;

export const logoutBody = {
  type: 'object',
  properties: { everywhere: { type: 'boolean', default: false, description: 'End every session of the trainer, not only this one' } },
  additionalProperties: false,
} as const;

export const authPayloadSchema = {
  type: 'object',
  required: ['token', 'tokenType', 'expiresAt', 'refreshToken', 'refreshExpiresAt', 'trainer'],
  properties: {
    token: { type: 'string', description: 'A JWT to send as `Authorization: Bearer <token>`' },
    tokenType: { type: 'string', enum: ['Bearer'] },
    expiresAt: dateTime,
    refreshToken: { type: 'string', description: 'Single use: exchange it at POST /trainer/authenticate/refresh before refreshExpiresAt' },
    refreshExpiresAt: dateTime,
    trainer: { $ref: 'Trainer#' },
  },
  additionalProperties: false,
} as const;

/** A JSON answer's documentation: its schema and what it is. */
export const jsonResponse = (schema: unknown, description: string) => ({ description, content: { 'application/json': { schema } } });

/** The documented error answers of a route: each catalogue code it can give, as problem+json. */
export function errorResponses(...codes: ErrorCode[]): Record<number, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of [...codes, 'INTERNAL_SERVER_ERROR', 'SERVICE_UNAVAILABLE'] as ErrorCode[]) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      status,
      {
        description: list.join(' or '),
        ...(status === 429 || status === 503
          ? {
              headers: {
                'Retry-After': { type: 'integer', description: 'Seconds to wait before trying again (503: when the database was busy)' },
              },
            }
          : {}),
        content: { 'application/problem+json': { schema: { $ref: 'Problem#' } } },
      },
    ]),
  );
}

import type { FastifyInstance } from 'fastify';
import type { TrainerJson } from '../../src/rest/present';
import { TRAINER_COLUMNS, type OwnProperty, type ShownProperty } from '../../src/trainers/trainer.columns';
import { gql, type GraphQLResponse } from './graphql';

/*
 * One vocabulary for both transports, so that each behaviour is written once and run through
 * GraphQL and REST alike. The drivers translate, they never decide: every outcome is what the
 * server answered. Where the contract lets the transports differ (GraphQL answers null for a
 * missing trainer or creature, REST 404), the GraphQL driver reports null as NOT_FOUND.
 */

export interface FieldError {
  field: string;
  message: string;
}
export type Outcome<T> = { ok: true; value: T } | { ok: false; code: string; status: number; fields?: FieldError[] };

/** A value as an answer's JSON carries it: dates as ISO text, enum values as text. */
type JsonOf<T> = T extends Date ? string : T extends string ? string : T;
/**
 * A trainer as both transports answer it: REST's TrainerJson (every public column of
 * TRAINER_COLUMNS), with the properties only the trainer itself sees (its email) null for
 * another reader (GraphQL's null, REST's absent property).
 */
export type TrainerView = { -readonly [P in ShownProperty]-?: JsonOf<TrainerJson[P]> } & {
  -readonly [P in OwnProperty]-?: JsonOf<NonNullable<TrainerJson[P]>> | null;
};
export interface CreatureView {
  id: number;
  name: string;
  speciesId: number;
  level: number;
  trainerId: number;
  createdAt: string;
}
export interface PageView<T> {
  items: T[];
  totalCount: number;
  limit: number;
  offset: number;
  /** The cursor of the page that follows, or null (trainer pages, creature pages by cursor and REST creature pages). */
  nextCursor?: string | null;
  /** REST pages: the Link header, when there is one. */
  link?: string;
}
export interface AuthView {
  token: string;
  tokenType: string;
  expiresAt: string;
  refreshToken: string;
  refreshExpiresAt: string;
  trainer: TrainerView;
}
/** A query-string value as a client would write it: strings as they are, anything else as its JSON text. */
const asParam = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

export interface PageQuery {
  limit?: unknown;
  offset?: unknown;
  /** A cursor; for GraphQL creature lists, its presence (null to start) reads Trainer.creaturePage. */
  after?: unknown;
  filter?: { nickname?: string; nicknameContains?: string; team?: string };
}

export interface Driver {
  readonly name: 'graphql' | 'rest';
  register(input: Record<string, unknown>): Promise<Outcome<TrainerView>>;
  authenticate(email: unknown, password: unknown): Promise<Outcome<AuthView>>;
  getTrainer(token: string | undefined, id: string): Promise<Outcome<TrainerView>>;
  listTrainers(token: string | undefined, query: PageQuery): Promise<Outcome<PageView<TrainerView>>>;
  createCreature(token: string | undefined, trainerId: string, input: Record<string, unknown>): Promise<Outcome<CreatureView>>;
  /** GraphQL reads a creature by id alone; REST under its trainer's path. */
  getCreature(token: string | undefined, trainerId: string, creatureId: string): Promise<Outcome<CreatureView>>;
  listCreatures(token: string | undefined, trainerId: string, query: PageQuery): Promise<Outcome<PageView<CreatureView>>>;
  deleteCreature(token: string | undefined, trainerId: string, creatureId: string): Promise<Outcome<CreatureView | null>>;
  /** GraphQL updates a creature by id alone; REST under its trainer's path (PATCH). */
  updateCreature(token: string | undefined, trainerId: string, creatureId: string, change: unknown): Promise<Outcome<CreatureView>>;
  refresh(refreshToken: unknown): Promise<Outcome<AuthView>>;
  /** true when logged out (GraphQL's answer; REST's 204). */
  logout(token: string | undefined, everywhere?: boolean): Promise<Outcome<boolean>>;
  /** GraphQL changes the caller (updateMe); REST the trainer of the path (PATCH, as JSON Merge Patch). */
  updateMe(token: string | undefined, trainerId: string, change: unknown): Promise<Outcome<TrainerView>>;
  /** true when changed (GraphQL's answer; REST's 204). */
  changePassword(token: string | undefined, trainerId: string, currentPassword: unknown, newPassword: unknown): Promise<Outcome<boolean>>;
  /** true when deleted (GraphQL's answer; REST's 204). */
  deleteMe(token: string | undefined, trainerId: string, password: unknown): Promise<Outcome<boolean>>;
}

// ---------------------------------------------------------------- Reading answers

/*
 * Answers are checked against the shape the contract gives them before a test sees them: a
 * field of the wrong type, or missing, fails the test with the answer in the message. Fields the
 * shape does not name are kept, so that an assertion on the whole value still sees them.
 */

type Raw = Record<string, unknown>;
type Guard<T> = (value: unknown) => value is T;
/** A guard for every property of T. */
type Shape<T> = { [K in keyof T]-?: Guard<T[K]> };

const isRaw = (value: unknown): value is Raw => typeof value === 'object' && value !== null && !Array.isArray(value);
const isString: Guard<string> = (value) => typeof value === 'string';
const isNumber: Guard<number> = (value) => typeof value === 'number';
const isArray: Guard<unknown[]> = (value) => Array.isArray(value);
const isAnything: Guard<unknown> = (_value): _value is unknown => true;
const orNull =
  <T>(is: Guard<T>): Guard<T | null> =>
  (value): value is T | null =>
    value === null || is(value);
const optional =
  <T>(is: Guard<T>): Guard<T | undefined> =>
  (value): value is T | undefined =>
    value === undefined || is(value);

function hasShape<T>(value: unknown, shape: Shape<T>): value is T & Raw {
  if (!isRaw(value)) return false;
  for (const key in shape) if (!shape[key](value[key])) return false;
  return true;
}

/** `value` as T, or a thrown error naming what was expected and showing what came. */
function parse<T>(value: unknown, shape: Shape<T>, what: string): T & Raw {
  if (!hasShape(value, shape)) throw new Error(`Not ${what} as the contract says: ${JSON.stringify(value)}`);
  return value;
}

/** A trainer as both transports write it, but its id and email. */
const TRAINER_COMMON: Shape<Omit<TrainerView, 'id' | OwnProperty>> = {
  nickname: isString,
  firstName: isString,
  lastName: isString,
  team: isString,
  creaturesOwned: isNumber,
  createdAt: isString,
};
/** A creature as both transports write it, but its ids. */
const CREATURE_COMMON = { name: isString, speciesId: isNumber, level: isNumber, createdAt: isString };
/** A session as both transports write it, but its trainer. */
const AUTH_COMMON = {
  token: isString,
  tokenType: isString,
  expiresAt: isString,
  refreshToken: isString,
  refreshExpiresAt: isString,
  trainer: isAnything,
};
const PAGE_COMMON = {
  items: isArray,
  totalCount: isNumber,
  limit: isNumber,
  offset: isNumber,
  nextCursor: optional(orNull(isString)),
};

// ---------------------------------------------------------------- GraphQL

const TRAINER_FIELDS = TRAINER_COLUMNS.map((column) => column.property).join(' ');
const CREATURE_FIELDS = 'id name speciesId level createdAt trainer { id }';
const AUTH_FIELDS = `token tokenType expiresAt refreshToken refreshExpiresAt trainer { ${TRAINER_FIELDS} }`;

const trainerOf = (raw: unknown): TrainerView => {
  const trainer = parse(raw, { ...TRAINER_COMMON, id: isString, email: orNull(isString) }, 'a GraphQL Trainer');
  return { ...trainer, id: Number(trainer.id) };
};
const creatureOf = (raw: unknown): CreatureView => {
  const { trainer, ...rest } = parse(raw, { ...CREATURE_COMMON, id: isString, trainer: isRaw }, 'a GraphQL Creature');
  return { ...rest, id: Number(rest.id), trainerId: Number(parse(trainer, { id: isString }, "a GraphQL Creature's trainer").id) };
};
const authOf = (raw: unknown): AuthView => {
  const auth = parse(raw, AUTH_COMMON, 'a GraphQL AuthPayload');
  return { ...auth, trainer: trainerOf(auth.trainer) };
};
const doneOf = (raw: unknown): boolean => raw === true;

/** The error of an answer, or NOT_FOUND when data[key] is null, or data[key] read by `map`. */
function outcome<T>(res: GraphQLResponse, key: string, map: (raw: unknown) => T): Outcome<T> {
  const error = res.errors?.[0];
  if (error) {
    const fields = error.extensions?.fields?.map((f) => ({ ...f, field: f.field.replace(/^input\./, '') }));
    return { ok: false, code: error.extensions?.code ?? 'NONE', status: res.status, ...(fields ? { fields } : {}) };
  }
  const raw = isRaw(res.data) ? res.data[key] : undefined;
  if (raw === null || raw === undefined) return { ok: false, code: 'NOT_FOUND', status: res.status };
  return { ok: true, value: map(raw) };
}

export function graphqlDriver(app: FastifyInstance): Driver {
  return {
    name: 'graphql',
    async register(input) {
      const res = await gql(app, `mutation($input: RegisterTrainerInput!) { registerTrainer(input: $input) { ${TRAINER_FIELDS} } }`, {
        input,
      });
      return outcome(res, 'registerTrainer', trainerOf);
    },
    async authenticate(email, password) {
      const res = await gql(
        app,
        `mutation($email: String!, $password: String!) { authenticate(email: $email, password: $password) { ${AUTH_FIELDS} } }`,
        { email, password },
      );
      return outcome(res, 'authenticate', authOf);
    },
    async getTrainer(token, id) {
      const res = await gql(app, `query($id: ID!) { trainer(id: $id) { ${TRAINER_FIELDS} } }`, { id }, token);
      return outcome(res, 'trainer', trainerOf);
    },
    async listTrainers(token, query) {
      const res = await gql(
        app,
        `query($limit: Int! = 20, $offset: Int! = 0, $after: String, $filter: TrainerFilter) { trainers(limit: $limit, offset: $offset, after: $after, filter: $filter) { totalCount limit offset nextCursor items { ${TRAINER_FIELDS} } } }`,
        { ...query },
        token,
      );
      return outcome(res, 'trainers', (raw) => {
        const page = parse(raw, PAGE_COMMON, 'a GraphQL TrainerPage');
        return { ...page, items: page.items.map(trainerOf) };
      });
    },
    async createCreature(token, trainerId, input) {
      const res = await gql(
        app,
        `mutation($trainerId: ID!, $input: CreateCreatureInput!) { createCreature(trainerId: $trainerId, input: $input) { ${CREATURE_FIELDS} } }`,
        { trainerId, input },
        token,
      );
      return outcome(res, 'createCreature', creatureOf);
    },
    async getCreature(token, _trainerId, creatureId) {
      const res = await gql(app, `query($id: ID!) { creature(id: $id) { ${CREATURE_FIELDS} } }`, { id: creatureId }, token);
      return outcome(res, 'creature', creatureOf);
    },
    async listCreatures(token, trainerId, query) {
      if ('after' in query) {
        // By cursor: Trainer.creaturePage (`after: null` starts at the first creature).
        const { after, limit = 20 } = query;
        const paged = await gql(
          app,
          `query($id: ID!, $limit: Int!, $after: String) { trainer(id: $id) { creaturesOwned creaturePage(limit: $limit, after: $after) { items { ${CREATURE_FIELDS} } nextCursor } } }`,
          { id: trainerId, limit, after },
          token,
        );
        return outcome(paged, 'trainer', (raw) => {
          const trainer = parse(raw, { creaturePage: isRaw, creaturesOwned: isNumber }, "a GraphQL Trainer's creaturePage");
          const page = parse(trainer.creaturePage, { items: isArray, nextCursor: orNull(isString) }, 'a GraphQL CreaturePage');
          return {
            items: page.items.map(creatureOf),
            totalCount: trainer.creaturesOwned,
            limit: Number.NaN,
            offset: Number.NaN,
            nextCursor: page.nextCursor,
          };
        });
      }
      const res = await gql(
        app,
        `query($id: ID!, $limit: Int! = 20, $offset: Int! = 0) { trainer(id: $id) { creaturesOwned creatures(limit: $limit, offset: $offset) { ${CREATURE_FIELDS} } } }`,
        { id: trainerId, ...query },
        token,
      );
      return outcome(res, 'trainer', (raw) => {
        const trainer = parse(raw, { creatures: isArray, creaturesOwned: isNumber }, "a GraphQL Trainer's creatures");
        return {
          items: trainer.creatures.map(creatureOf),
          totalCount: trainer.creaturesOwned,
          // Not echoed by GraphQL; NaN so that no assertion can pass on a value the server never sent.
          limit: Number.NaN,
          offset: Number.NaN,
        };
      });
    },
    async deleteCreature(token, _trainerId, creatureId) {
      const res = await gql(app, `mutation($id: ID!) { deleteCreature(id: $id) { ${CREATURE_FIELDS} } }`, { id: creatureId }, token);
      return outcome(res, 'deleteCreature', creatureOf);
    },
    async updateCreature(token, _trainerId, creatureId, change) {
      const res = await gql(
        app,
        `mutation($id: ID!, $input: UpdateCreatureInput!) { updateCreature(id: $id, input: $input) { ${CREATURE_FIELDS} } }`,
        { id: creatureId, input: change },
        token,
      );
      return outcome(res, 'updateCreature', creatureOf);
    },
    async refresh(refreshToken) {
      const res = await gql(app, `mutation($refreshToken: String!) { refreshSession(refreshToken: $refreshToken) { ${AUTH_FIELDS} } }`, {
        refreshToken,
      });
      return outcome(res, 'refreshSession', authOf);
    },
    async logout(token, everywhere) {
      const res = await gql(
        app,
        everywhere === undefined ? 'mutation { logout }' : 'mutation($everywhere: Boolean!) { logout(everywhere: $everywhere) }',
        everywhere === undefined ? {} : { everywhere },
        token,
      );
      return outcome(res, 'logout', doneOf);
    },
    async updateMe(token, _trainerId, change) {
      const res = await gql(
        app,
        `mutation($input: UpdateTrainerInput!) { updateMe(input: $input) { ${TRAINER_FIELDS} } }`,
        { input: change },
        token,
      );
      return outcome(res, 'updateMe', trainerOf);
    },
    async changePassword(token, _trainerId, currentPassword, newPassword) {
      const res = await gql(
        app,
        'mutation($c: String!, $n: String!) { changePassword(currentPassword: $c, newPassword: $n) }',
        { c: currentPassword, n: newPassword },
        token,
      );
      return outcome(res, 'changePassword', doneOf);
    },
    async deleteMe(token, _trainerId, password) {
      const res = await gql(app, 'mutation($p: String!) { deleteMe(password: $p) }', { p: password }, token);
      return outcome(res, 'deleteMe', doneOf);
    },
  };
}

// ---------------------------------------------------------------- REST

export function restDriver(app: FastifyInstance): Driver {
  async function call<T>(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    token: string | undefined,
    body: unknown,
    okStatus: number,
    map: (raw: unknown, headers: Record<string, unknown>) => T,
    contentType = 'application/json',
  ): Promise<Outcome<T>> {
    const res = await app.inject({
      method,
      url,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { 'content-type': contentType } : {}),
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
    if (res.statusCode === okStatus) return { ok: true, value: map(res.body ? res.json<unknown>() : null, res.headers) };
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = res.json<{ code: string; status: number; fields?: FieldError[] }>();
    expect(problem.status).toBe(res.statusCode);
    return { ok: false, code: problem.code, status: res.statusCode, ...(problem.fields ? { fields: problem.fields } : {}) };
  }
  // REST leaves out the email of another trainer (GraphQL answers null).
  const trainerOfRest = (raw: unknown): TrainerView => {
    const trainer = parse(raw, { ...TRAINER_COMMON, id: isNumber, email: optional(isString) }, 'a REST trainer');
    return { ...trainer, email: trainer.email ?? null };
  };
  const creatureOfRest = (raw: unknown): CreatureView =>
    parse(raw, { ...CREATURE_COMMON, id: isNumber, trainerId: isNumber }, 'a REST creature');
  const authOfRest = (raw: unknown): AuthView => {
    const auth = parse(raw, AUTH_COMMON, 'a REST session');
    return { ...auth, trainer: trainerOfRest(auth.trainer) };
  };
  const qs = (query: PageQuery) => {
    const params = new URLSearchParams();
    if (query.limit !== undefined) params.set('limit', asParam(query.limit));
    if (query.offset !== undefined) params.set('offset', asParam(query.offset));
    if (query.after !== undefined && query.after !== null) params.set('after', asParam(query.after));
    for (const [key, value] of Object.entries(query.filter ?? {})) if (value !== undefined) params.set(key, value);
    const text = params.toString();
    return text ? `?${text}` : '';
  };
  const seg = encodeURIComponent;

  return {
    name: 'rest',
    register: (input) => call('POST', '/trainer', undefined, input, 201, trainerOfRest),
    authenticate: (email, password) => call('POST', '/trainer/authenticate', undefined, { email, password }, 200, authOfRest),
    getTrainer: (token, id) => call('GET', `/trainer/${seg(id)}`, token, undefined, 200, trainerOfRest),
    listTrainers: (token, query) =>
      call('GET', `/trainer${qs(query)}`, token, undefined, 200, (raw, headers) => {
        const page = parse(raw, PAGE_COMMON, 'a REST page of trainers');
        return { ...page, items: page.items.map(trainerOfRest), ...(typeof headers.link === 'string' ? { link: headers.link } : {}) };
      }),
    createCreature: (token, trainerId, input) => call('POST', `/trainer/${seg(trainerId)}/creature`, token, input, 201, creatureOfRest),
    getCreature: (token, trainerId, creatureId) =>
      call('GET', `/trainer/${seg(trainerId)}/creature/${seg(creatureId)}`, token, undefined, 200, creatureOfRest),
    listCreatures: (token, trainerId, query) =>
      call('GET', `/trainer/${seg(trainerId)}/creature${qs(query)}`, token, undefined, 200, (raw, headers) => {
        const page = parse(raw, PAGE_COMMON, 'a REST page of creatures');
        return { ...page, items: page.items.map(creatureOfRest), ...(typeof headers.link === 'string' ? { link: headers.link } : {}) };
      }),
    deleteCreature: (token, trainerId, creatureId) =>
      call('DELETE', `/trainer/${seg(trainerId)}/creature/${seg(creatureId)}`, token, undefined, 204, () => null),
    // As JSON Merge Patch, the media type PATCH clients send; plain JSON has its own test.
    updateCreature: (token, trainerId, creatureId, change) =>
      call(
        'PATCH',
        `/trainer/${seg(trainerId)}/creature/${seg(creatureId)}`,
        token,
        change,
        200,
        creatureOfRest,
        'application/merge-patch+json',
      ),
    refresh: (refreshToken) => call('POST', '/trainer/authenticate/refresh', undefined, { refreshToken }, 200, authOfRest),
    logout: (token, everywhere) =>
      call('POST', '/trainer/logout', token, everywhere === undefined ? undefined : { everywhere }, 204, () => true),
    // As JSON Merge Patch, the media type PATCH clients send; plain JSON has its own test.
    updateMe: (token, trainerId, change) =>
      call('PATCH', `/trainer/${seg(trainerId)}`, token, change, 200, trainerOfRest, 'application/merge-patch+json'),
    changePassword: (token, trainerId, currentPassword, newPassword) =>
      call('POST', `/trainer/${seg(trainerId)}/password`, token, { currentPassword, newPassword }, 204, () => true),
    deleteMe: (token, trainerId, password) => call('DELETE', `/trainer/${seg(trainerId)}`, token, { password }, 204, () => true),
  };
}

export const drivers = [graphqlDriver, restDriver];

/** [name, driver factory] pairs, for `describe.each(namedDrivers)('through %s', ...)`. */
export const namedDrivers = drivers.map((make) => [make.name.replace('Driver', ''), make] as const);

/** The value of a successful outcome; a failed one fails the test, naming its status, code and fields. */
export function value<T>(result: Outcome<T>): T {
  if (!result.ok) throw new Error(`expected success, got ${result.status} ${result.code} ${JSON.stringify(result.fields ?? '')}`);
  return result.value;
}

import type { FastifyInstance } from 'fastify';
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

export interface TrainerView {
  id: number;
  nickname: string;
  firstName: string;
  lastName: string;
  email: string | null;
  team: string;
  creaturesOwned: number;
  createdAt: string;
}
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
  /** Trainer pages: the cursor of the page that follows, or null. */
  nextCursor?: string | null;
  /** REST trainer pages: the Link header, when there is one. */
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
  /** Trainer pages only. */
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

// ---------------------------------------------------------------- GraphQL

const TRAINER_FIELDS = 'id nickname firstName lastName email team creaturesOwned createdAt';
const CREATURE_FIELDS = 'id name speciesId level createdAt trainer { id }';
const AUTH_FIELDS = `token tokenType expiresAt refreshToken refreshExpiresAt trainer { ${TRAINER_FIELDS} }`;

type Raw = Record<string, unknown>;

const trainerOf = (raw: Raw): TrainerView => ({ ...(raw as unknown as TrainerView), id: Number(raw.id) });
const creatureOf = (raw: Raw): CreatureView => {
  const { trainer, ...rest } = raw as Raw & { trainer: { id: string } };
  return { ...(rest as unknown as CreatureView), id: Number(rest.id), trainerId: Number(trainer.id) };
};

function outcome<T>(res: GraphQLResponse, pick: (data: Raw) => Raw | null | undefined, map: (raw: Raw) => T): Outcome<T> {
  const error = res.errors?.[0];
  if (error) {
    const fields = error.extensions?.fields?.map((f) => ({ ...f, field: f.field.replace(/^input\./, '') }));
    return { ok: false, code: error.extensions?.code ?? 'NONE', status: res.status, ...(fields ? { fields } : {}) };
  }
  const raw = pick(res.data as Raw);
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
      return outcome(res, (d) => d.registerTrainer as Raw, trainerOf);
    },
    async authenticate(email, password) {
      const res = await gql(
        app,
        `mutation($email: String!, $password: String!) { authenticate(email: $email, password: $password) { ${AUTH_FIELDS} } }`,
        { email, password },
      );
      return outcome(
        res,
        (d) => d.authenticate as Raw,
        (raw) => ({ ...(raw as unknown as AuthView), trainer: trainerOf(raw.trainer as Raw) }),
      );
    },
    async getTrainer(token, id) {
      const res = await gql(app, `query($id: ID!) { trainer(id: $id) { ${TRAINER_FIELDS} } }`, { id }, token);
      return outcome(res, (d) => d.trainer as Raw, trainerOf);
    },
    async listTrainers(token, query) {
      const res = await gql(
        app,
        `query($limit: Int! = 20, $offset: Int! = 0, $after: String, $filter: TrainerFilter) { trainers(limit: $limit, offset: $offset, after: $after, filter: $filter) { totalCount limit offset nextCursor items { ${TRAINER_FIELDS} } } }`,
        { ...query },
        token,
      );
      return outcome(
        res,
        (d) => d.trainers as Raw,
        (raw) => ({
          ...(raw as unknown as PageView<TrainerView>),
          items: (raw.items as Raw[]).map(trainerOf),
        }),
      );
    },
    async createCreature(token, trainerId, input) {
      const res = await gql(
        app,
        `mutation($trainerId: ID!, $input: CreateCreatureInput!) { createCreature(trainerId: $trainerId, input: $input) { ${CREATURE_FIELDS} } }`,
        { trainerId, input },
        token,
      );
      return outcome(res, (d) => d.createCreature as Raw, creatureOf);
    },
    async getCreature(token, _trainerId, creatureId) {
      const res = await gql(app, `query($id: ID!) { creature(id: $id) { ${CREATURE_FIELDS} } }`, { id: creatureId }, token);
      return outcome(res, (d) => d.creature as Raw, creatureOf);
    },
    async listCreatures(token, trainerId, query) {
      const res = await gql(
        app,
        `query($id: ID!, $limit: Int! = 20, $offset: Int! = 0) { trainer(id: $id) { creaturesOwned creatures(limit: $limit, offset: $offset) { ${CREATURE_FIELDS} } } }`,
        { id: trainerId, ...query },
        token,
      );
      return outcome(
        res,
        (d) => d.trainer as Raw,
        (raw) => ({
          items: (raw.creatures as Raw[]).map(creatureOf),
          totalCount: raw.creaturesOwned as number,
          // Not echoed by GraphQL; NaN so that no assertion can pass on a value the server never sent.
          limit: Number.NaN,
          offset: Number.NaN,
        }),
      );
    },
    async deleteCreature(token, _trainerId, creatureId) {
      const res = await gql(app, `mutation($id: ID!) { deleteCreature(id: $id) { ${CREATURE_FIELDS} } }`, { id: creatureId }, token);
      return outcome(res, (d) => d.deleteCreature as Raw, creatureOf);
    },
    async updateCreature(token, _trainerId, creatureId, change) {
      const res = await gql(
        app,
        `mutation($id: ID!, $input: UpdateCreatureInput!) { updateCreature(id: $id, input: $input) { ${CREATURE_FIELDS} } }`,
        { id: creatureId, input: change },
        token,
      );
      return outcome(res, (d) => d.updateCreature as Raw, creatureOf);
    },
    async refresh(refreshToken) {
      const res = await gql(app, `mutation($refreshToken: String!) { refreshSession(refreshToken: $refreshToken) { ${AUTH_FIELDS} } }`, {
        refreshToken,
      });
      return outcome(
        res,
        (d) => d.refreshSession as Raw,
        (raw) => ({ ...(raw as unknown as AuthView), trainer: trainerOf(raw.trainer as Raw) }),
      );
    },
    async logout(token, everywhere) {
      const res = await gql(
        app,
        everywhere === undefined ? 'mutation { logout }' : 'mutation($everywhere: Boolean!) { logout(everywhere: $everywhere) }',
        everywhere === undefined ? {} : { everywhere },
        token,
      );
      return outcome(
        res,
        (d) => ({ done: d.logout }),
        (raw) => raw.done === true,
      );
    },
    async updateMe(token, _trainerId, change) {
      const res = await gql(
        app,
        `mutation($input: UpdateTrainerInput!) { updateMe(input: $input) { ${TRAINER_FIELDS} } }`,
        { input: change },
        token,
      );
      return outcome(res, (d) => d.updateMe as Raw, trainerOf);
    },
    async changePassword(token, _trainerId, currentPassword, newPassword) {
      const res = await gql(
        app,
        'mutation($c: String!, $n: String!) { changePassword(currentPassword: $c, newPassword: $n) }',
        { c: currentPassword, n: newPassword },
        token,
      );
      return outcome(
        res,
        (d) => ({ done: d.changePassword }),
        (raw) => raw.done === true,
      );
    },
    async deleteMe(token, _trainerId, password) {
      const res = await gql(app, 'mutation($p: String!) { deleteMe(password: $p) }', { p: password }, token);
      return outcome(
        res,
        (d) => ({ done: d.deleteMe }),
        (raw) => raw.done === true,
      );
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
    map: (raw: Raw | null, headers: Record<string, unknown>) => T,
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
    if (res.statusCode === okStatus) return { ok: true, value: map(res.body ? res.json<Raw>() : null, res.headers) };
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = res.json<{ code: string; status: number; fields?: FieldError[] }>();
    expect(problem.status).toBe(res.statusCode);
    return { ok: false, code: problem.code, status: res.statusCode, ...(problem.fields ? { fields: problem.fields } : {}) };
  }
  const trainerOfRest = (raw: Raw | null): TrainerView => ({
    ...(raw as unknown as TrainerView),
    email: (raw?.email as string | undefined) ?? null,
  });
  const creatureOfRest = (raw: Raw | null): CreatureView => raw as unknown as CreatureView;
  const qs = (query: PageQuery) => {
    const params = new URLSearchParams();
    if (query.limit !== undefined) params.set('limit', asParam(query.limit));
    if (query.offset !== undefined) params.set('offset', asParam(query.offset));
    if (query.after !== undefined) params.set('after', asParam(query.after));
    for (const [key, value] of Object.entries(query.filter ?? {})) if (value !== undefined) params.set(key, value);
    const text = params.toString();
    return text ? `?${text}` : '';
  };
  const seg = encodeURIComponent;

  return {
    name: 'rest',
    register: (input) => call('POST', '/trainer', undefined, input, 201, trainerOfRest),
    authenticate: (email, password) =>
      call('POST', '/trainer/authenticate', undefined, { email, password }, 200, (raw) => ({
        ...(raw as unknown as AuthView),
        trainer: trainerOfRest(raw!.trainer as Raw),
      })),
    getTrainer: (token, id) => call('GET', `/trainer/${seg(id)}`, token, undefined, 200, trainerOfRest),
    listTrainers: (token, query) =>
      call('GET', `/trainer${qs(query)}`, token, undefined, 200, (raw, headers) => ({
        ...(raw as unknown as PageView<TrainerView>),
        items: (raw!.items as Raw[]).map(trainerOfRest),
        ...(typeof headers.link === 'string' ? { link: headers.link } : {}),
      })),
    createCreature: (token, trainerId, input) => call('POST', `/trainer/${seg(trainerId)}/creature`, token, input, 201, creatureOfRest),
    getCreature: (token, trainerId, creatureId) =>
      call('GET', `/trainer/${seg(trainerId)}/creature/${seg(creatureId)}`, token, undefined, 200, creatureOfRest),
    listCreatures: (token, trainerId, query) =>
      call(
        'GET',
        `/trainer/${seg(trainerId)}/creature${qs(query)}`,
        token,
        undefined,
        200,
        (raw) => raw as unknown as PageView<CreatureView>,
      ),
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
    refresh: (refreshToken) =>
      call('POST', '/trainer/authenticate/refresh', undefined, { refreshToken }, 200, (raw) => ({
        ...(raw as unknown as AuthView),
        trainer: trainerOfRest(raw!.trainer as Raw),
      })),
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

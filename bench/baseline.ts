// The benchmark's baseline: the least work a correct answer must do, on bare Fastify and the bare
// driver (bench/README.md, "The baseline"). Every route checks the HS256 Bearer token
// (signature, alg, exp) and whether the caller still exists.
// - GET /trainer/:id: ONE round trip reading the trainer, its creature count and the caller.
// - GET /page?offset=n: the JSON of the GraphQL nested page `trainers(limit: 100, offset: n)
//   { items { id creaturesOwned creatures(limit: 10) { id name } } }`, hand-written:
//   one statement for the caller and 100 trainers with their counts, one for their first 10
//   creatures each (a window function), JSON.stringify.
// - GET /list?offset=n: the JSON of REST `GET /trainer?limit=20&offset=n`, hand-written: one
//   statement for the caller, 21 trainers from the offset (a deferred join on the ids' index),
//   their counts (the trainer's kept column), the caller's own email, and the total (trainer_count): an
//   OFFSET walk of the ids' index per request, as a list written by hand walks it; the next page's
//   cursor signed as the service signs it, JSON.stringify.
// - GET /range?offset=n: the same answer from the 21 trainers with ids above n (a range of the
//   primary key, one statement with the caller and the total): the page at offset n of the
//   bench's table, whose ids run 1, 2, 3... without gaps, with no walk to the offset. The least a
//   list of 20 costs on this stack (Fastify, mysql2, JSON.stringify), whatever keeps its ids.
// Env: PORT, DATABASE_URL (mysql://... or sqlite:<path>), JWT_SECRET.
import Database from 'better-sqlite3';
import Fastify, { type FastifyReply } from 'fastify';
import jwt from 'jsonwebtoken';
import { createPool } from 'mysql2/promise';
import { createSecretKey } from 'node:crypto';
import { CursorCodec } from '../src/common/cursor';

const SQL = `SELECT t.id, t.nickname, t.first_name AS firstName, t.last_name AS lastName, t.team, t.created_at AS createdAt,
  (SELECT COUNT(*) FROM creature c WHERE c.trainer_id = t.id) AS creaturesOwned,
  EXISTS(SELECT 1 FROM trainer v WHERE v.id = ?) AS callerOk
FROM trainer t WHERE t.id = ?`;

// No row when the caller is gone; one row with a null id when the page is empty.
const PAGE_SQL = `SELECT t.id, (SELECT COUNT(*) FROM creature c WHERE c.trainer_id = t.id) AS creaturesOwned
FROM trainer v LEFT JOIN (SELECT id FROM trainer ORDER BY id LIMIT 100 OFFSET ?) t ON 1 = 1
WHERE v.id = ? ORDER BY t.id`;

/**
 * The list's statement, its page's ids chosen by `ids` (one parameter, the offset). No row when
 * the caller is gone; one row with a null id when the page is empty.
 */
const listSql = (
  ids: string,
) => `SELECT t.id, t.nickname, t.first_name AS firstName, t.last_name AS lastName, t.email, t.team, t.created_at AS createdAt,
  t.creatures_owned AS creaturesOwned, (SELECT COALESCE(SUM(n), 0) FROM trainer_count) AS total
FROM trainer v LEFT JOIN (SELECT p.* FROM (${ids}) q JOIN trainer p ON p.id = q.id) t ON 1 = 1
WHERE v.id = ? ORDER BY t.id`;
const LIST_SQL = listSql('SELECT id FROM trainer ORDER BY id LIMIT 21 OFFSET ?');
const RANGE_SQL = listSql('SELECT id FROM trainer WHERE id > ? ORDER BY id LIMIT 21');

const creaturesSql = (n: number) => `SELECT id, name, trainer_id AS trainerId FROM (
  SELECT id, name, trainer_id, ROW_NUMBER() OVER (PARTITION BY trainer_id ORDER BY id) AS rn
  FROM creature WHERE trainer_id IN (${Array.from({ length: n }, () => '?').join(', ')})
) ranked WHERE rn <= 10 ORDER BY id`;

interface PageRow {
  id: number | null;
  creaturesOwned: number | string;
}

interface CreatureRow {
  id: number;
  name: string;
  trainerId: number;
}

interface ListRow {
  id: number | null;
  nickname: string;
  email: string;
  firstName: string;
  lastName: string;
  team: string;
  createdAt: Date | string;
  creaturesOwned: number | string;
  total: number | string;
}

interface Row {
  id: number;
  nickname: string;
  firstName: string;
  lastName: string;
  team: string;
  createdAt: Date | string;
  creaturesOwned: number | string;
  callerOk: number | string;
}

/** A stored time as ISO text: SQLite keeps UTC text without a zone; MySQL (timezone Z) gives a Date. */
const isoOf = (at: Date | string): string => (typeof at === 'string' ? new Date(`${at.replace(' ', 'T')}Z`) : at).toISOString();

/** A trainer as REST shows it, from a row of the trainer's columns (as GET /trainer/:id and the list read them). */
const trainerJson = (row: Omit<Row, 'callerOk'> | ListRow) => ({
  id: Number(row.id),
  nickname: row.nickname,
  firstName: row.firstName,
  lastName: row.lastName,
  team: row.team,
  creaturesOwned: Number(row.creaturesOwned),
  createdAt: isoOf(row.createdAt),
});

async function main(): Promise<void> {
  const url = process.env.DATABASE_URL ?? '';
  // A KeyObject, as the service uses: from a string, jsonwebtoken would try to parse a PEM key on every call.
  const secret = createSecretKey(Buffer.from(process.env.JWT_SECRET ?? '', 'utf8'));
  let statements = 0;
  let requests = 0;
  let lookup: (callerId: number, id: number) => Promise<Row | undefined>;
  let all: <T>(sql: string, values: number[]) => Promise<T[]>;
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length), { readonly: true });
    const stmt = db.prepare(SQL);
    lookup = async (callerId, id) => stmt.get(callerId, id) as Row | undefined;
    all = async <T>(sql: string, values: number[]) => db.prepare(sql).all(...values) as T[];
  } else {
    const pool = createPool({ uri: url, connectionLimit: 10, timezone: 'Z' });
    lookup = async (callerId, id) => {
      const [rows] = await pool.execute(SQL, [callerId, id]);
      return (rows as Row[])[0];
    };
    all = async <T>(sql: string, values: number[]) => (await pool.execute(sql, values))[0] as T[];
  }

  const caller = (header: string): number | undefined => {
    try {
      const payload = jwt.verify(header.slice(7), secret, {
        algorithms: ['HS256'],
        issuer: 'creature-registry',
        audience: 'creature-registry',
      }) as jwt.JwtPayload;
      if (!header.startsWith('Bearer ') || typeof payload.exp !== 'number') return undefined;
      return Number(payload.sub);
    } catch {
      return undefined;
    }
  };

  // The service's own cursor signing (an HMAC), so that the list's answer is the service's, byte for byte.
  const cursors = new CursorCodec(process.env.JWT_SECRET ?? '', 'trainers');
  const app = Fastify({ logger: false });
  app.get('/stats', async () => ({ statements, requests }));

  app.get<{ Params: { id: string } }>('/trainer/:id', async (request, reply) => {
    requests += 1;
    const callerId = caller(request.headers.authorization ?? '');
    if (callerId === undefined) return reply.code(401).send({ code: 'UNAUTHENTICATED' });
    const id = Number(request.params.id);
    if (!Number.isInteger(id) || id < 1) return reply.code(400).send({ code: 'BAD_USER_INPUT' });
    statements += 1;
    const row = await lookup(callerId, id);
    if (!row || Number(row.callerOk) !== 1) return reply.code(row ? 401 : 404).send({ code: row ? 'UNAUTHENTICATED' : 'NOT_FOUND' });
    return trainerJson(row);
  });
  /**
   * A route of pages by `?offset=`: the token, the offset, then one statement given the offset and
   * the caller (no row: the caller is gone, 401), whose rows `answer` turns into the JSON body.
   */
  const pageRoute = <R>(
    path: string,
    sql: string,
    answer: (rows: R[], callerId: number, offset: number, reply: FastifyReply) => Promise<string>,
  ) =>
    app.get<{ Querystring: { offset?: string } }>(path, async (request, reply) => {
      requests += 1;
      const callerId = caller(request.headers.authorization ?? '');
      if (callerId === undefined) return reply.code(401).send({ code: 'UNAUTHENTICATED' });
      const offset = Number(request.query.offset ?? 0);
      if (!Number.isInteger(offset) || offset < 0) return reply.code(400).send({ code: 'BAD_USER_INPUT' });
      statements += 1;
      const rows = await all<R>(sql, [offset, callerId]);
      if (rows.length === 0) return reply.code(401).send({ code: 'UNAUTHENTICATED' });
      return reply.type('application/json; charset=utf-8').send(await answer(rows, callerId, offset, reply));
    });
  pageRoute<PageRow>('/page', PAGE_SQL, async (rows) => {
    const trainers = rows.filter((row) => row.id !== null);
    const ids = trainers.map((row) => Number(row.id));
    const creatures = new Map<number, { id: string; name: string }[]>(ids.map((id) => [id, []]));
    if (ids.length > 0) {
      statements += 1;
      for (const c of await all<CreatureRow>(creaturesSql(ids.length), ids)) {
        creatures.get(Number(c.trainerId))?.push({ id: String(c.id), name: c.name });
      }
    }
    const items = trainers.map((row) => ({
      id: String(row.id),
      creaturesOwned: Number(row.creaturesOwned),
      creatures: creatures.get(Number(row.id)),
    }));
    return JSON.stringify({ data: { trainers: { items } } });
  });
  const listAnswer = async (rows: ListRow[], callerId: number, offset: number, reply: FastifyReply) => {
    const found = rows.filter((row) => row.id !== null);
    // Only the caller sees its own email.
    const items = found.slice(0, 20).map((row) => ({ ...trainerJson(row), ...(Number(row.id) === callerId ? { email: row.email } : {}) }));
    const last = items.at(-1);
    const nextCursor = found.length > 20 && last ? cursors.encode(last.id) : null;
    if (nextCursor) reply.header('link', `</trainer?limit=20&after=${nextCursor}>; rel="next"`);
    return JSON.stringify({ items, totalCount: Number(rows[0].total), limit: 20, offset, nextCursor });
  };
  pageRoute<ListRow>('/list', LIST_SQL, listAnswer);
  pageRoute<ListRow>('/range', RANGE_SQL, listAnswer);
  await app.listen({ port: Number(process.env.PORT ?? 4900), host: '127.0.0.1' });
}

main().catch((error: unknown) => {
  process.stderr.write(`baseline failed: ${String(error)}\n`);
  process.exit(1);
});

// The benchmark's baseline: the least work a correct GET /trainer/:id must do, on bare Fastify
// and the bare driver (bench/README.md, "The baseline"): check the HS256 Bearer
// token (signature, alg, exp), then ONE round trip reading the trainer, its creature count and
// whether the caller still exists. Env: PORT, DATABASE_URL (mysql://... or sqlite:<path>), JWT_SECRET.
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import jwt from 'jsonwebtoken';
import { createPool } from 'mysql2/promise';
import { createSecretKey } from 'node:crypto';

const SQL = `SELECT t.id, t.nickname, t.first_name AS firstName, t.last_name AS lastName, t.team, t.created_at AS createdAt,
  (SELECT COUNT(*) FROM creature c WHERE c.trainer_id = t.id) AS creaturesOwned,
  EXISTS(SELECT 1 FROM trainer v WHERE v.id = ?) AS callerOk
FROM trainer t WHERE t.id = ?`;

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

async function main(): Promise<void> {
  const url = process.env.DATABASE_URL ?? '';
  // A KeyObject, as the service uses: from a string, jsonwebtoken would try to parse a PEM key on every call.
  const secret = createSecretKey(Buffer.from(process.env.JWT_SECRET ?? '', 'utf8'));
  let statements = 0;
  let lookup: (callerId: number, id: number) => Promise<Row | undefined>;
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length), { readonly: true });
    const stmt = db.prepare(SQL);
    lookup = async (callerId, id) => stmt.get(callerId, id) as Row | undefined;
  } else {
    const pool = createPool({ uri: url, connectionLimit: 10, timezone: 'Z' });
    lookup = async (callerId, id) => {
      const [rows] = await pool.execute(SQL, [callerId, id]);
      return (rows as Row[])[0];
    };
  }

  const app = Fastify({ logger: false });
  app.get('/stats', async () => ({ statements }));
  app.get<{ Params: { id: string } }>('/trainer/:id', async (request, reply) => {
    const header = request.headers.authorization ?? '';
    let callerId: number;
    try {
      const payload = jwt.verify(header.slice(7), secret, {
        algorithms: ['HS256'],
        issuer: 'creature-registry',
        audience: 'creature-registry',
      }) as jwt.JwtPayload;
      if (!header.startsWith('Bearer ') || typeof payload.exp !== 'number') throw new Error('bad token');
      callerId = Number(payload.sub);
    } catch {
      return reply.code(401).send({ code: 'UNAUTHENTICATED' });
    }
    const id = Number(request.params.id);
    if (!Number.isInteger(id) || id < 1) return reply.code(400).send({ code: 'BAD_USER_INPUT' });
    statements += 1;
    const row = await lookup(callerId, id);
    if (!row || Number(row.callerOk) !== 1) return reply.code(row ? 401 : 404).send({ code: row ? 'UNAUTHENTICATED' : 'NOT_FOUND' });
    return {
      id: row.id,
      nickname: row.nickname,
      firstName: row.firstName,
      lastName: row.lastName,
      team: row.team,
      creaturesOwned: Number(row.creaturesOwned),
      // SQLite keeps UTC text without a zone; MySQL (timezone Z) gives a Date.
      createdAt: (typeof row.createdAt === 'string' ? new Date(`${row.createdAt.replace(' ', 'T')}Z`) : row.createdAt).toISOString(),
    };
  });
  await app.listen({ port: Number(process.env.PORT ?? 4900), host: '127.0.0.1' });
}

main().catch((error: unknown) => {
  process.stderr.write(`baseline failed: ${String(error)}\n`);
  process.exit(1);
});

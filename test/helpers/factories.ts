import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { PasswordHasher } from '../../src/auth/password';
import { TokenIssuer } from '../../src/auth/jwt';
import { Creature } from '../../src/creatures/creature.entity';
import { creatureNameKey } from '../../src/creatures/creature.service';
import { Team } from '../../src/trainers/team';
import { Trainer } from '../../src/trainers/trainer.entity';
import { TEST_JWT_SECRET } from './app';

export const TEST_PASSWORD = 'correct-horse-battery';

let sharedHash: Promise<string> | undefined;
/** One real scrypt hash of TEST_PASSWORD, reused so that setting up many trainers stays fast. */
const passwordHash = () => (sharedHash ??= new PasswordHasher().hash(TEST_PASSWORD));

export const unique = (prefix = 't'): string => `${prefix}${randomBytes(5).toString('hex')}`;

export interface TrainerFixture {
  trainer: Trainer;
  token: string;
  email: string;
}

/** An access token for a trainer's session, signed as the test apps sign them. */
export function tokenFor(trainerId: number, sessionId: number): string {
  return new TokenIssuer(TEST_JWT_SECRET, 3600).issue(trainerId, sessionId).token;
}

/** A new session of the trainer (as a sign-in opens one, without the password hash) and its tokens. */
export async function signIn(app: FastifyInstance, trainerId: number): Promise<{ token: string; refreshToken: string; sessionId: number }> {
  const session = await app.services.sessions.open(trainerId);
  return { token: tokenFor(trainerId, session.sessionId), refreshToken: session.refreshToken, sessionId: session.sessionId };
}

/** A trainer row with a unique nickname and email (who can log in with TEST_PASSWORD), and a token of a session of its own. */
export async function createTrainer(app: FastifyInstance, overrides: Partial<Trainer> = {}): Promise<TrainerFixture> {
  const nickname = overrides.nickname ?? unique('tr_');
  const email = overrides.email ?? `${nickname.toLowerCase()}@example.test`;
  const trainer = Object.assign(new Trainer(), {
    nickname,
    nicknameKey: nickname.toLowerCase(),
    firstName: 'Test',
    lastName: 'Trainer',
    email,
    passwordHash: await passwordHash(),
    team: Team.MYSTIC,
    createdAt: new Date(),
    ...overrides,
  });
  // As a registration writes it (its nickname's suffixes and its team's count in the same transaction).
  trainer.id = await app.services.trainers.insertHashed(trainer);
  return { trainer, token: (await signIn(app, trainer.id)).token, email };
}

export async function createCreature(app: FastifyInstance, trainerId: number, overrides: Partial<Creature> = {}): Promise<Creature> {
  const name = overrides.name ?? unique('cr_');
  const repo = app.dataSource.getRepository(Creature);
  const creature = repo.create({
    name,
    nameKey: creatureNameKey(name),
    speciesId: 25,
    level: 5,
    trainerId,
    createdAt: new Date(),
    ...overrides,
  });
  await repo.insert(creature);
  creature.id = Number(creature.id);
  // What the service's create does in its transaction (see nextEventSeqStatements).
  await app.dataSource.query('UPDATE trainer SET creatures_owned = creatures_owned + 1 WHERE id = ?', [trainerId]);
  return creature;
}

/** Removes a trainer as deleteMe does once its password checked out (AccountService.remove), without an API call. */
export async function deleteTrainer(app: FastifyInstance, trainer: Pick<Trainer, 'id'>): Promise<void> {
  await app.services.accounts.remove(trainer.id);
}

/** A creature created through the REST route, as a client would (its event kept and published); its name. */
export async function createThroughApi(app: FastifyInstance, owner: TrainerFixture, name: string, speciesId = 1): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: `/trainer/${owner.trainer.id}/creature`,
    headers: { authorization: `Bearer ${owner.token}` },
    payload: { name, speciesId },
  });
  if (res.statusCode !== 201) throw new Error(`creating ${name} answered ${res.statusCode}: ${res.body}`);
  return name;
}

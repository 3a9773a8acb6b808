import type { LoginThrottle } from '../auth/login-throttle';
import type { PasswordHasher } from '../auth/password';
import type { RequestAuth } from '../auth/request-auth';
import type { SessionEndings } from '../auth/session-endings';
import { matches, PASSWORD_PATTERN } from '../common/rules';
import { normalizeText } from '../common/text';
import { uniqueViolation } from '../db/errors';
import { AppError } from '../errors';
import { DELETION_CHUNK, deletedTrainer, deletionMessage } from '../events/creature-event';
import type { EventLog } from '../events/event-log.queries';
import type { CreatureEventBus } from '../events/event-bus';
import type { TrainerLists } from './trainer-lists';
import { PROFILE_COLUMNS, type ProfileProperty } from './trainer.columns';
import type { Trainer } from './trainer.entity';
import type { DeletedAccount, PasswordProof, TrainerChangeRow, TrainerQueries } from './trainer.queries';

/** What updateMe changes (the public columns a profile change writes); a field left out stays as it is. At least one must be given. */
export type ProfileChange = { readonly [P in ProfileProperty]?: Trainer[P] };

/** Where each change is written: the request's logger (it carries the request id). */
export interface ChangeLog {
  info(details: object, message: string): void;
}

/** What a trainer's deletion removed: as TrainerQueries.deleteAccount says, and how many of its creatures. */
export interface RemovedAccount extends DeletedAccount {
  readonly creatures: number;
  /**
   * Set when the database failed while the creatures were being removed: the trainer is gone all
   * the same (its deletion committed first), the creatures left stay invisible until `npm run
   * reconcile` removes them; the error's code, for the log.
   */
  readonly creaturesLeft?: string;
}

/** The trainer was deleted after its token was checked. */
const gone = (): AppError => new AppError('UNAUTHENTICATED', 'Your account no longer exists');

/** What the caller's password proved no longer holds at the write: its session ended, or the password changed (or the account went). */
const stale = (): AppError =>
  new AppError('UNAUTHENTICATED', 'Your session has ended or your password has changed meanwhile: sign in again');

const forbidden = (): AppError => new AppError('FORBIDDEN', 'You can only change your own account');

/**
 * A signed-in trainer's own account: its profile, its password, its deletion. Every change is
 * one transaction (TrainerQueries), so lists, counts, searches and the caller check of every
 * instance show it from the next statement on; what is open on the trainer's behalf elsewhere
 * (sessions' sockets, creature subscriptions) is told after the commit, on every instance
 * (SessionEndings, CreatureEventBus). Each change is logged as one line: the trainer's id and
 * what changed, never a password, token or email.
 *
 * A password sent to prove who is asking (changePassword's current one, deleteMe's) is a login
 * attempt of the account: counted by LoginThrottle before it is hashed (RATE_LIMITED over the
 * limits, so a stolen access token cannot be used to guess the password), checked in the login
 * queue of the PasswordHasher, and a wrong one stays counted as a failed login.
 */
export class AccountService {
  constructor(
    private readonly queries: TrainerQueries,
    /** Told of every trainer that changes team or leaves: pages by offset on every instance follow at once. */
    private readonly lists: TrainerLists,
    private readonly hasher: PasswordHasher,
    private readonly throttle: LoginThrottle,
    private readonly endings: SessionEndings,
    private readonly events: CreatureEventBus,
    /** A deleted trainer's kept events are erased with its creatures. */
    private readonly eventLog: EventLog,
  ) {}

  /**
   * Changes the caller's nickname, names and/or team; the trainer as it now is. With
   * `trainerId` (the REST path's), the caller must be that trainer (FORBIDDEN). A nickname
   * another trainer has, in any case, is TRAINER_ALREADY_EXISTS, decided by the unique index (of
   * two trainers taking one free nickname at once, exactly one gets it); its own in another case
   * is fine, and the old one is free once this commits.
   */
  async update(auth: RequestAuth, change: ProfileChange, log: ChangeLog, trainerId?: number): Promise<Trainer> {
    const viewer = await auth.requireViewer();
    if (trainerId !== undefined && trainerId !== viewer.id) throw forbidden();
    const row: TrainerChangeRow = {
      nickname: change.nickname,
      nicknameKey: change.nickname?.toLowerCase(),
      firstName: change.firstName === undefined ? undefined : normalizeText(change.firstName),
      lastName: change.lastName === undefined ? undefined : normalizeText(change.lastName),
      team: change.team,
    };
    const given = PROFILE_COLUMNS.map((column) => column.property).filter((field) => row[field] !== undefined);
    if (given.length === 0) {
      throw new AppError('BAD_USER_INPUT', 'An update must change at least one of nickname, firstName, lastName and team', [
        { field: 'input', message: 'must have at least one of nickname, firstName, lastName and team' },
      ]);
    }
    let updated: Trainer | null;
    try {
      updated = await this.queries.updateProfile(viewer.id, row);
    } catch (error) {
      if (uniqueViolation(error) === undefined) throw error;
      throw new AppError('TRAINER_ALREADY_EXISTS', 'This nickname is already taken', [{ field: 'nickname', message: 'is already taken' }]);
    }
    if (!updated) throw gone();
    if (row.team !== undefined && row.team !== viewer.team) this.lists.changed({ id: viewer.id, from: viewer.team, to: row.team });
    const changed = given.filter((field) => viewer[field] !== row[field]);
    log.info({ trainerId: viewer.id, changed }, 'trainer profile changed');
    return updated;
  }

  /**
   * Replaces the caller's password once its current one checks out, and ends every other session
   * of the trainer in the same transaction: their access and refresh tokens are refused from
   * then on, their sockets close (4401) on every instance. The caller's own session goes on. A
   * wrong current password is BAD_USER_INPUT naming `currentPassword`, and a failed login.
   */
  async changePassword(
    auth: RequestAuth,
    currentPassword: string,
    newPassword: string,
    clientIp: string,
    log: ChangeLog,
    trainerId?: number,
  ): Promise<void> {
    const viewer = await auth.requireViewer();
    if (trainerId !== undefined && trainerId !== viewer.id) throw forbidden();
    const proof = await this.checkPassword(viewer, auth.sessionId(), currentPassword, clientIp, 'currentPassword');
    const hash = await this.hasher.hashForSignedIn(newPassword);
    const sessionId = proof.sessionId;
    const ended = await this.queries.changePassword(viewer.id, hash, proof);
    if (ended === null) throw stale();
    this.endings.publish({ trainerId: viewer.id, except: sessionId });
    log.info({ trainerId: viewer.id, changed: ['password'], sessionsEnded: ended }, 'trainer password changed');
  }

  /**
   * Deletes the caller, once its password checks out, with its creatures and sessions, in one
   * transaction: from then on nothing of it answers anywhere, and its nickname and email can be
   * registered again. Subscribers of its creatures get a DELETED event for each, then their
   * subscriptions complete; its sockets close (4401); on every instance. A wrong password is
   * BAD_USER_INPUT naming `password`, and a failed login; nothing is removed.
   */
  async deleteMe(auth: RequestAuth, password: string, clientIp: string, log: ChangeLog, trainerId?: number): Promise<void> {
    const viewer = await auth.requireViewer();
    if (trainerId !== undefined && trainerId !== viewer.id) throw forbidden();
    const proof = await this.checkPassword(viewer, auth.sessionId(), password, clientIp, 'password');
    const deleted = await this.remove(viewer.id, proof);
    if (!deleted) throw stale();
    log.info(
      {
        trainerId: viewer.id,
        changed: ['deleted'],
        creatures: deleted.creatures,
        sessionsEnded: deleted.sessions,
        ...(deleted.creaturesLeft === undefined ? {} : { creaturesLeft: deleted.creaturesLeft }),
      },
      deleted.creaturesLeft === undefined ? 'trainer deleted' : 'trainer deleted; some creatures are left for npm run reconcile',
    );
  }

  /**
   * Deletes a trainer with everything of it and tells, after the commit, its sessions' sockets
   * and the subscribers of its creatures (DELETED events, then the end), on every instance. What
   * was removed, or null when there was no such trainer (or `proof`, deleteMe's checked password,
   * no longer holds at the write). No other checks.
   *
   * The trainer, its sessions, its nickname and its place in the counts go in one short
   * transaction (TrainerQueries.deleteAccount): from its commit nothing of the trainer shows, its
   * tokens are refused. Its creatures, which no read shows any more, are then removed a stretch
   * at a time, each stretch's DELETED events published as it goes, with a turn of the event loop
   * between stretches: however many creatures it had, no other request waits for more than a
   * stretch, and no process holds all of them at once. Resolves once every creature is gone, or
   * once the database has failed midway: the deletion has happened by then (a client told
   * otherwise would retry it and be refused), so it is answered as done, with `creaturesLeft`.
   */
  async remove(trainerId: number, proof?: PasswordProof): Promise<RemovedAccount | null> {
    // As a creature write: while it runs, a gap in the trainer's event numbers may still fill.
    return this.events.during(trainerId, async () => {
      const removed = await this.queries.deleteAccount(trainerId, proof);
      if (!removed) return null;
      this.lists.changed({ id: trainerId, from: removed.trainer.team });
      this.endings.publish({ trainerId });
      const trainer = deletedTrainer(removed.trainer);
      const at = new Date().toISOString();
      let seq = removed.lastSeq + 1;
      let afterId = 0;
      try {
        for (;;) {
          const creatures = await this.queries.removeLeftCreatures(trainerId, afterId, DELETION_CHUNK);
          const last = creatures.length < DELETION_CHUNK;
          this.events.publish(deletionMessage(trainer, seq, creatures, last, at));
          seq += creatures.length;
          if (last) break;
          afterId = creatures[creatures.length - 1].id;
          await new Promise((resolve) => setImmediate(resolve));
        }
        // Its kept events go too, a stretch at a time: nothing of the trainer is kept.
        await this.eventLog.erase(trainerId);
      } catch (error) {
        // The database failed midway: the trainer is gone all the same and its subscriptions end
        // here, without DELETED events for the creatures left (invisible; reconcile removes them).
        this.events.publish(deletionMessage(trainer, seq, [], true, at));
        const code = (error as { code?: unknown }).code;
        return { ...removed, creatures: seq - removed.lastSeq - 1, creaturesLeft: typeof code === 'string' ? code : 'unknown' };
      }
      return { ...removed, creatures: seq - removed.lastSeq - 1 };
    });
  }

  /**
   * A password the caller sends to prove who it is, as a login of its account: counted before
   * any hashing (RATE_LIMITED over the limits), checked in the login queue; a wrong one stays
   * counted as a failure, a right one clears this address's failures as a login does. The hash
   * it was checked against and the caller's session: what it allows is written only if both
   * still hold then (TrainerQueries), so a password changed or a session ended meanwhile (by
   * another session's change, a logout) makes it UNAUTHENTICATED, with nothing written.
   */
  private async checkPassword(
    viewer: Trainer,
    sessionId: number,
    password: string,
    clientIp: string,
    field: string,
  ): Promise<PasswordProof> {
    await this.throttle.attempt(viewer.email, clientIp);
    const stored = await this.queries.passwordHash(viewer.id, sessionId);
    if (stored === null) throw stale();
    // As for logins: no stored password has control characters, which scrypt's padding would hide.
    const correct = (await this.hasher.verify(password, stored)) && matches(PASSWORD_PATTERN, password);
    if (!correct) throw new AppError('BAD_USER_INPUT', 'The password is not right', [{ field, message: 'is not the current password' }]);
    await this.throttle.succeeded(viewer.email, clientIp);
    return { passwordHash: stored, sessionId };
  }
}

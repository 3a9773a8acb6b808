import type { RedisClient } from './common/channel';
import type { DataSource } from 'typeorm';
import { AuthService } from './auth/auth.service';
import { TokenIssuer } from './auth/jwt';
import { LoginThrottle } from './auth/login-throttle';
import type { Config } from './config';
import { CreatureService } from './creatures/creature.service';
import { TrainerService } from './trainers/trainer.service';
import { PasswordHasher } from './auth/password';
import { RefusalDelay } from './auth/refusal-delay';
import { CreatureQueries } from './creatures/creature.queries';
import { QUERY_TIMEOUT_MS } from './db/data-source';
import { Sql, type StatementLoad } from './db/sql';
import { TrainerQueries } from './trainers/trainer.queries';
import { TrainerLists } from './trainers/trainer-lists';
import { CursorCodec } from './common/cursor';
import { SessionQueries } from './auth/session.queries';
import { SessionService } from './auth/session.service';
import { SESSION_ENDINGS, type SessionEndings } from './auth/session-endings';
import { CREATURE_EVENTS, CreatureEventBus } from './events/event-bus';
import { EventLog } from './events/event-log.queries';
import { LIST_CHANGES } from './trainers/trainer-lists';
import { LocalChannels, type Channels } from './common/channel';
import { AccountService } from './trainers/account.service';
import type { Tracing } from './telemetry/spans';
import type { Replicas } from './db/replicas';
import type { Metrics } from './ops/metrics';

/** The service layer both transports call. Built once per app; no module-level state. */
export interface Services {
  readonly trainers: TrainerService;
  /** Trainer lists and counts: told of every trainer that joins, leaves or changes team, on every instance. */
  readonly lists: TrainerLists;
  readonly creatures: CreatureService;
  readonly auth: AuthService;
  /** A signed-in trainer's own account: profile changes, password changes, deletion. */
  readonly accounts: AccountService;
  readonly sessions: SessionService;
  /** Sessions that end (logout, replay, cap): what is open on their behalf closes at once. */
  readonly sessionEndings: SessionEndings;
  /** Creature events for subscriptions (published after each committed write). */
  readonly events: CreatureEventBus;
  /** The kept creature events (resumed subscriptions, gaps), pruned now and then. */
  readonly eventLog: EventLog;
  readonly hasher: PasswordHasher;
  /** The statements under way on the database, against its connections: what admission weighs. */
  readonly databaseLoad: StatementLoad;
}

/**
 * @param redis shared rate-limit counters, when several instances run (REDIS_URL or REDIS_CLUSTER_NODES)
 * @param tracing with tracing on: spans of the statements run on SQLite
 * @param replicas read replicas, for the reads that may lag
 * @param listClock the clock of the kept list ids' age (BuildOptions.listClock)
 * @param channels where events, session endings and list changes travel (over Redis with REDIS_URL)
 * @param metrics the app's metrics, where Sql counts the lock conflicts its statements meet (see Sql's `retried`)
 */
export function createServices(
  dataSource: DataSource,
  config: Config,
  redis?: RedisClient,
  tracing?: Tracing,
  replicas?: Replicas,
  {
    listClock,
    channels = new LocalChannels(),
    metrics,
  }: { listClock?: () => number; channels?: Channels; metrics?: Pick<Metrics, 'lockConflicts'> } = {},
): Services {
  const sql = new Sql(dataSource, { timeoutMs: QUERY_TIMEOUT_MS, slowMs: config.slowQueryMs }, tracing, replicas, metrics);
  const trainerQueries = new TrainerQueries(sql);
  const eventLog = new EventLog(sql, config.eventsRetentionSeconds * 1000);
  const creatureQueries = new CreatureQueries(sql, eventLog);
  const delay = new RefusalDelay(config.rateLimitedDelayMs);
  const hasher = new PasswordHasher(undefined, delay);
  const events = new CreatureEventBus(
    {
      position: (trainerId) => trainerQueries.eventSeq(trainerId),
      positions: (trainerIds) => trainerQueries.eventSeqs(trainerIds),
      read: (trainerId, after, upTo, limit) => eventLog.read(trainerId, after, upTo, limit),
      firstKept: (trainerId) => eventLog.firstKept(trainerId),
    },
    {},
    channels.keyed(CREATURE_EVENTS),
  );
  const creatures = new CreatureService(
    creatureQueries,
    trainerQueries,
    events,
    new CursorCodec(config.jwtSecret, 'creatures'),
    config.maxOffset,
  );
  const throttle = new LoginThrottle({
    maxFailures: config.loginMaxFailures,
    windowSeconds: config.loginWindowSeconds,
    accountMaxFailures: config.loginAccountMaxFailures,
    ipPerMinute: config.loginIpPerMinute,
    registrationsPerHour: config.registerIpPerHour,
    redis,
    delay,
  });
  const lists = new TrainerLists(trainerQueries, config.maxOffset, listClock, channels.channel(LIST_CHANGES));
  const trainers = new TrainerService(
    trainerQueries,
    lists,
    hasher,
    throttle,
    new CursorCodec(config.jwtSecret, 'trainers'),
    config.maxOffset,
  );
  const sessionEndings: SessionEndings = channels.channel(SESSION_ENDINGS);
  const sessions = new SessionService(
    new SessionQueries(sql),
    config.refreshTtlSeconds,
    config.refreshReuseGraceSeconds,
    config.jwtSecret,
    sessionEndings,
  );
  const auth = new AuthService(trainers, new TokenIssuer(config.jwtSecret, config.jwtTtlSeconds), throttle, hasher, sessions);
  const accounts = new AccountService(trainerQueries, lists, hasher, throttle, sessionEndings, events, eventLog);
  return { trainers, lists, creatures, auth, accounts, sessions, sessionEndings, events, eventLog, hasher, databaseLoad: sql.load };
}

// `npm run bench -- --events`: live events across two instances sharing MySQL and Redis, measured
// from outside with graphql-ws's own client. 1,000 subscribers (one socket each, spread over both
// instances and over loopback addresses, as many browsers would be) follow 100 trainers; one writer
// per trainer creates and deletes creatures, alternating instances and transports, for a fixed
// time. Every subscriber must receive every event of its trainer, once, in commit order; the run
// reports delivery latency and each instance's RSS, idle with 1,000 subscribers and after the
// stream. See bench/README.md, "Live events".
import { createClient, type Client } from 'graphql-ws';
import { performance } from 'node:perf_hooks';
import WebSocket, { type ClientOptions } from 'ws';
import { BENCH_PASSWORD } from './seed';

export interface EventsOptions {
  /** The two instances' origins (http://host:port) and process ids. */
  readonly bases: readonly string[];
  readonly pids: readonly number[];
  readonly trainers: number;
  readonly duration: number;
  readonly subscribers: number;
  /** Writes per second in all (each writer pauses so that together they keep this pace). */
  readonly rate: number;
  readonly log: (message: string) => void;
  readonly memory: (pid: number) => { rssMb: number };
  /** A trainer's last event number, read from the database. */
  readonly eventSeq: (trainerId: number) => Promise<number>;
  /** How many events creature_event keeps, read from the database. */
  readonly kept: () => Promise<number>;
  /**
   * The kept events at the second size: `count` more are added (for trainers that do not exist,
   * at the present time, so pruning keeps them), and taken away again by `remove`.
   */
  readonly keptEvents?: { count: number; add: () => Promise<void>; remove: () => Promise<void> };
}

export interface EventsReport {
  readonly subscribers: number;
  readonly trainers: number;
  readonly writes: number;
  /** The pace asked for (--rate) and the one kept. */
  readonly rate: number;
  readonly writesPerSecond: number;
  readonly expectedDeliveries: number;
  readonly delivered: number;
  readonly missing: number;
  readonly duplicated: number;
  readonly outOfOrder: number;
  readonly sequenceJumps: number;
  /** Milliseconds from the write being sent, and from its answer, to the event's arrival. */
  readonly latencyFromSend: Percentiles;
  readonly latencyFromAnswer: Percentiles;
  /** Per instance: before any subscriber, with all of them connected and idle, after the stream. */
  readonly rssMb: { before: number; idle: number; after: number }[];
  /** A subscriber resuming 1,000 events behind (`after`), on the instance that made none of them. */
  readonly replay: Replay;
  /** The same replay with `keptEvents.count` more events kept, then again once they are gone (none when not asked). */
  readonly replayAtSize?: Replay;
  readonly replayAgain?: Replay;
}

/** A replay (measureReplay), with how many events the table kept and what its writes took. */
interface Replay {
  readonly events: number;
  readonly ms: number;
  readonly inOrder: boolean;
  /** Events in creature_event while it ran. */
  readonly kept: number;
  /** Milliseconds a creation (which keeps its event in its own transaction) took, sent to answered. */
  readonly create: Percentiles;
}

interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

const SUBSCRIPTION = 'subscription($t: ID!) { creatureEvents(trainerId: $t) { kind sequence creature { id name } } }';
/** Sockets per loopback source address: under the service's 50 per address, per instance. */
const PER_ADDRESS = 25;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Write {
  readonly kind: 'CREATED' | 'DELETED';
  readonly id: string;
  readonly sentAt: number;
  answeredAt: number;
}

interface Arrival {
  readonly kind: string;
  readonly id: string;
  readonly sequence: number;
  readonly at: number;
}

interface Subscriber {
  readonly trainer: number;
  readonly client: Client;
  readonly arrivals: Arrival[];
}

/** A WebSocket that connects from a given loopback address (graphql-ws takes the class). */
function socketFrom(localAddress: string): unknown {
  return class extends WebSocket {
    constructor(address: string | URL, protocols?: string | string[], options?: ClientOptions) {
      super(address, protocols, { ...options, localAddress });
    }
  };
}

function percentiles(values: number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN);
  const round = (v: number) => Math.round(v * 10) / 10;
  return { p50: round(at(0.5)), p95: round(at(0.95)), p99: round(at(0.99)), max: round(sorted.at(-1) ?? NaN) };
}

async function post<T>(url: string, body: unknown, token?: string): Promise<{ status: number; body: T }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

export async function runEvents(options: EventsOptions): Promise<EventsReport> {
  const { bases, pids, log } = options;
  const trainerCount = Math.min(100, options.subscribers);
  const perTrainer = Math.ceil(options.subscribers / trainerCount);
  // Trainers spread over the seeded range, away from trainer 1 (the create/delete case's).
  const trainerIds = Array.from({ length: trainerCount }, (_, k) => 2 + Math.floor((k * (options.trainers - 2)) / trainerCount));

  log(`events: signing in ${trainerCount} trainers`);
  const tokens = new Map<number, string>();
  for (const id of trainerIds) {
    const res = await post<{ token: string }>(`${bases[0]}/trainer/authenticate`, {
      email: `bench${id}@bench.test`,
      password: BENCH_PASSWORD,
    });
    if (res.status !== 200) throw new Error(`cannot sign in bench${id}: ${res.status}`);
    tokens.set(id, res.body.token);
  }
  const rssBefore = pids.map((pid) => options.memory(pid).rssMb);

  log(`events: connecting ${trainerCount * perTrainer} subscribers over ${bases.length} instances`);
  const subscribers: Subscriber[] = [];
  const connected: Promise<void>[] = [];
  for (let i = 0; i < trainerCount * perTrainer; i += 1) {
    const trainer = trainerIds[i % trainerCount];
    const base = bases[Math.floor(i / trainerCount) % bases.length];
    const address = `127.0.0.${2 + Math.floor(i / PER_ADDRESS)}`;
    let onConnected!: () => void;
    connected.push(new Promise<void>((resolve) => (onConnected = resolve)));
    const client = createClient({
      url: `${base.replace('http', 'ws')}/graphql`,
      webSocketImpl: socketFrom(address),
      connectionParams: { authorization: `Bearer ${tokens.get(trainer)}` },
      lazy: false,
      retryAttempts: 0,
      onNonLazyError: (error) => log(`events: subscriber ${i} could not connect: ${String(error)}`),
      on: { connected: () => onConnected() },
    });
    const subscriber: Subscriber = { trainer, client, arrivals: [] };
    client.subscribe<{ creatureEvents: { kind: string; sequence: number; creature: { id: string } } }>(
      { query: SUBSCRIPTION, variables: { t: String(trainer) } },
      {
        next: (value) => {
          const event = value.data?.creatureEvents;
          if (event) subscriber.arrivals.push({ kind: event.kind, id: event.creature.id, sequence: event.sequence, at: performance.now() });
        },
        error: (error) => log(`events: subscriber ${i} failed: ${JSON.stringify(error).slice(0, 200)}`),
        complete: () => undefined,
      },
    );
    subscribers.push(subscriber);
  }
  await Promise.all(connected);

  // Probe writes until every subscriber has had one of its trainer's: then all subscriptions are
  // live (a subscription starts a moment after its socket's acknowledgement).
  const probes = new Map<number, { id: string; base: string }[]>(trainerIds.map((t) => [t, []]));
  const live = (s: Subscriber) => s.arrivals.some((a) => probes.get(s.trainer)!.some((p) => p.id === a.id));
  for (let round = 0; !subscribers.every(live); round += 1) {
    if (round === 30) throw new Error(`${subscribers.filter((s) => !live(s)).length} subscribers never went live`);
    const waiting = new Set(subscribers.filter((s) => !live(s)).map((s) => s.trainer));
    await Promise.all(
      [...waiting].map(async (trainer, k) => {
        const base = bases[(k + round) % bases.length];
        const res = await post<{ id: number }>(
          `${base}/trainer/${trainer}/creature`,
          { name: `ev-probe-${Date.now()}-${k}`, speciesId: 1 },
          tokens.get(trainer),
        );
        probes.get(trainer)!.push({ id: String(res.body.id), base });
      }),
    );
    await sleep(1000);
  }
  await Promise.all(
    [...probes].flatMap(([trainer, list]) =>
      list.map((probe) =>
        fetch(`${probe.base}/trainer/${trainer}/creature/${probe.id}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${tokens.get(trainer)}` },
        }),
      ),
    ),
  );
  await sleep(3000);
  const rssIdle = pids.map((pid) => options.memory(pid).rssMb);
  log(`events: all live; RSS idle ${rssIdle.join(' / ')} MB`);
  for (const s of subscribers) s.arrivals.length = 0;

  log(`events: streaming writes for ${options.duration} s`);
  const writes = new Map<number, Write[]>(trainerIds.map((t) => [t, []]));
  const stopAt = performance.now() + options.duration * 1000;
  const pauseMs = (trainerCount / options.rate) * 1000;
  let counter = 0;
  await Promise.all(
    trainerIds.map(async (trainer, k) => {
      const token = tokens.get(trainer)!;
      const record = writes.get(trainer)!;
      await sleep((k * pauseMs) / trainerCount);
      for (let n = 0; performance.now() < stopAt; n += 1) {
        const base = bases[(k + n) % bases.length];
        const name = `ev-${trainer}-${(counter += 1)}`;
        const graphql = n % 2 === 0;
        const sentAt = performance.now();
        let id: string;
        if (graphql) {
          const res = await post<{ data?: { createCreature: { id: string } } }>(
            `${base}/graphql`,
            { query: `mutation { createCreature(trainerId: "${trainer}", input: { name: "${name}", speciesId: 1 }) { id } }` },
            token,
          );
          if (!res.body.data) throw new Error(`create failed: ${JSON.stringify(res.body)}`);
          id = res.body.data.createCreature.id;
        } else {
          const res = await post<{ id: number }>(`${base}/trainer/${trainer}/creature`, { name, speciesId: 1 }, token);
          if (res.status !== 201) throw new Error(`create failed: ${res.status}`);
          id = String(res.body.id);
        }
        record.push({ kind: 'CREATED', id, sentAt, answeredAt: performance.now() });
        await sleep(pauseMs);
        const other = bases[(k + n + 1) % bases.length];
        const deleteSent = performance.now();
        if (graphql) {
          const res = await fetch(`${other}/trainer/${trainer}/creature/${id}`, {
            method: 'DELETE',
            headers: { authorization: `Bearer ${token}` },
          });
          if (res.status !== 204) throw new Error(`delete failed: ${res.status}`);
        } else {
          const res = await post<{ data?: unknown }>(
            `${other}/graphql`,
            { query: `mutation { deleteCreature(id: "${id}") { id } }` },
            token,
          );
          if (!res.body.data) throw new Error(`delete failed: ${JSON.stringify(res.body)}`);
        }
        record.push({ kind: 'DELETED', id, sentAt: deleteSent, answeredAt: performance.now() });
        await sleep(pauseMs);
      }
    }),
  );
  const elapsed = options.duration + (performance.now() - stopAt) / 1000;
  await sleep(2000);
  const rssAfter = pids.map((pid) => options.memory(pid).rssMb);

  let expectedDeliveries = 0;
  let delivered = 0;
  let missing = 0;
  let duplicated = 0;
  let outOfOrder = 0;
  let sequenceJumps = 0;
  const fromSend: number[] = [];
  const fromAnswer: number[] = [];
  for (const s of subscribers) {
    const expected = writes.get(s.trainer)!;
    const position = new Map(expected.map((w, i) => [`${w.kind} ${w.id}`, i]));
    expectedDeliveries += expected.length;
    delivered += s.arrivals.length;
    const seen = new Set<string>();
    let last = -1;
    for (const [i, arrival] of s.arrivals.entries()) {
      const key = `${arrival.kind} ${arrival.id}`;
      if (seen.has(key)) duplicated += 1;
      seen.add(key);
      const at = position.get(key);
      if (at === undefined) continue;
      if (at < last) outOfOrder += 1;
      last = Math.max(last, at);
      if (i > 0 && arrival.sequence !== s.arrivals[i - 1].sequence + 1) sequenceJumps += 1;
      fromSend.push(arrival.at - expected[at].sentAt);
      fromAnswer.push(Math.max(0, arrival.at - expected[at].answeredAt));
    }
    for (const key of position.keys()) if (!seen.has(key)) missing += 1;
  }
  await Promise.all(subscribers.map(async (s) => s.client.dispose()));
  const replay = await measureReplay(bases, trainerIds[0], tokens.get(trainerIds[0])!, options);
  let replayAtSize: Replay | undefined;
  let replayAgain: Replay | undefined;
  if (options.keptEvents) {
    // Small, large, small again: what the processes learn as they run favours neither size.
    log(`events: ${options.keptEvents.count.toLocaleString('en')} more kept events, then the same replay`);
    try {
      await options.keptEvents.add();
      replayAtSize = await measureReplay(bases, trainerIds[0], tokens.get(trainerIds[0])!, options);
    } finally {
      await options.keptEvents.remove();
    }
    log('events: those kept events gone again, the same replay');
    replayAgain = await measureReplay(bases, trainerIds[0], tokens.get(trainerIds[0])!, options);
  }
  const writeCount = [...writes.values()].reduce((sum, list) => sum + list.length, 0);
  return {
    subscribers: subscribers.length,
    trainers: trainerCount,
    writes: writeCount,
    rate: options.rate,
    writesPerSecond: Math.round(writeCount / elapsed),
    expectedDeliveries,
    delivered,
    missing,
    duplicated,
    outOfOrder,
    sequenceJumps,
    latencyFromSend: percentiles(fromSend),
    latencyFromAnswer: percentiles(fromAnswer),
    rssMb: pids.map((_, i) => ({ before: rssBefore[i], idle: rssIdle[i], after: rssAfter[i] })),
    replay,
    replayAtSize,
    replayAgain,
  };
}

const REPLAYED = 1000;
const RESUMED =
  'subscription($t: ID!, $after: Int) { creatureEvents(trainerId: $t, after: $after) { kind sequence creature { id name } } }';

/**
 * One trainer's REPLAYED events made through the first instance (creates and deletes, 10 at a
 * time), then one subscriber on the second resuming from before them: the time from its subscribe
 * message to the last of them.
 */
async function measureReplay(
  bases: readonly string[],
  trainer: number,
  token: string,
  { log, eventSeq, kept: keptNow }: Pick<EventsOptions, 'log' | 'eventSeq' | 'kept'>,
): Promise<Replay> {
  const kept = await keptNow();
  log(`events: ${REPLAYED} events of one trainer, then a replay of them (${kept.toLocaleString('en')} events kept)`);
  const first = await eventSeq(trainer);
  const creations: number[] = [];
  for (let made = 0; made < REPLAYED; made += 20) {
    await Promise.all(
      Array.from({ length: 10 }, async (_, k) => {
        const sent = performance.now();
        const res = await post<{ id: number }>(
          `${bases[0]}/trainer/${trainer}/creature`,
          { name: `replay-${made}-${k}-${Date.now()}`, speciesId: 1 },
          token,
        );
        creations.push(performance.now() - sent);
        if (res.status !== 201) throw new Error(`create failed: ${res.status}`);
        const gone = await fetch(`${bases[0]}/trainer/${trainer}/creature/${res.body.id}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${token}` },
        });
        if (gone.status !== 204) throw new Error(`delete failed: ${gone.status}`);
      }),
    );
  }
  const sequences: number[] = [];
  let done!: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  let connected!: () => void;
  const ready = new Promise<void>((resolve) => (connected = resolve));
  const client = createClient({
    url: `${bases[1].replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    lazy: false,
    retryAttempts: 0,
    on: { connected: () => connected() },
  });
  await ready;
  const started = performance.now();
  client.subscribe<{ creatureEvents: { sequence: number } }>(
    { query: RESUMED, variables: { t: String(trainer), after: first } },
    {
      next: (value) => {
        if (value.data) sequences.push(value.data.creatureEvents.sequence);
        if (sequences.length === REPLAYED) done();
      },
      error: (error) => log(`events: the replay failed: ${JSON.stringify(error).slice(0, 200)}`),
      complete: () => undefined,
    },
  );
  await Promise.race([all, sleep(30_000)]);
  const ms = Math.round(performance.now() - started);
  await client.dispose();
  return {
    events: sequences.length,
    ms,
    inOrder: sequences.every((seq, i) => seq === first + 1 + i),
    kept,
    create: percentiles(creations),
  };
}

const ratio = (a: number, b: number) => `${(a / Math.max(b, 0.01)).toFixed(2)}x`;

/** The replay at the large size against the mean of the two at the small size (before and after it). */
function sizeRow(large: Replay, small: readonly Replay[], ok: (pass: boolean) => string): string {
  const mean = (pick: (replay: Replay) => number) => small.reduce((sum, replay) => sum + pick(replay), 0) / small.length;
  const [ms, create] = [mean((replay) => replay.ms), mean((replay) => replay.create.p50)];
  const within = large.ms <= 1.5 * ms && large.create.p50 <= 1.5 * create;
  return `| the replay and its creations at ${large.kept.toLocaleString('en')} kept events against the two at ${small.map((replay) => replay.kept.toLocaleString('en')).join(' and ')} | replay ${ratio(large.ms, ms)}, creation p50 ${ratio(large.create.p50, create)} | within 1.5x (${ok(within)}) |`;
}

export function renderEvents(report: EventsReport): string {
  const ok = (pass: boolean) => (pass ? 'met' : '**missed**');
  const lines = [
    '| what | measured | target |',
    '|---|---|---|',
    `| subscribers (one socket each, over 2 instances) | ${report.subscribers}, following ${report.trainers} trainers | 1,000 |`,
    `| writes (creates and deletes, alternating instances and transports) | ${report.writes} (${report.writesPerSecond}/s) | steady, ${report.rate}/s asked (--rate) |`,
    `| events delivered / expected | ${report.delivered} / ${report.expectedDeliveries} | all |`,
    `| missing, duplicated, out of order, sequence jumps | ${report.missing}, ${report.duplicated}, ${report.outOfOrder}, ${report.sequenceJumps} | 0 (${ok(report.missing + report.duplicated + report.outOfOrder === 0)}) |`,
    `| latency from the write sent: p50 / p95 / p99 / max | ${report.latencyFromSend.p50} / ${report.latencyFromSend.p95} / ${report.latencyFromSend.p99} / ${report.latencyFromSend.max} ms | p99 <= 100 ms (${ok(report.latencyFromSend.p99 <= 100)}) |`,
    `| latency from the write's answer: p50 / p95 / p99 / max | ${report.latencyFromAnswer.p50} / ${report.latencyFromAnswer.p95} / ${report.latencyFromAnswer.p99} / ${report.latencyFromAnswer.max} ms | |`,
    ...report.rssMb.map(
      (rss, i) =>
        `| instance ${i === 0 ? 'A' : 'B'} RSS: before / 1,000 idle subscribers / after the stream | ${rss.before} / ${rss.idle} / ${rss.after} MB | idle <= 200 MB (${ok(rss.idle <= 200)}) |`,
    ),
    ...[report.replay, report.replayAtSize, report.replayAgain]
      .filter((replay) => replay !== undefined)
      .map(
        (replay) =>
          `| a replay of ${REPLAYED} events to one subscriber resuming on the other instance (\`after\`), from its subscribe to the last, ${replay.kept.toLocaleString('en')} events kept | ${replay.events} events in ${replay.ms} ms, ${replay.inOrder ? 'in order, none missing' : '**not in order or incomplete**'}; its creations p50 / p99 ${replay.create.p50} / ${replay.create.p99} ms | < 1 s (${ok(replay.ms < 1000 && replay.events === REPLAYED && replay.inOrder)}) |`,
      ),
    ...(report.replayAtSize && report.replayAgain ? [sizeRow(report.replayAtSize, [report.replay, report.replayAgain], ok)] : []),
  ];
  return lines.join('\n');
}

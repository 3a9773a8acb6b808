import { StatementLoad } from '../../src/db/sql';
import { Admission } from '../../src/http/admission';
import { AppError } from '../../src/errors';

/*
 * Admission's turns, step by step, against the load Sql keeps (two connections here): who goes on
 * at once, who waits, in which order they are let in, the refusal past the limit, and the budget
 * of what those let in weigh.
 */

const turn = () => new Promise((resolve) => setImmediate(resolve));

function admissions(waitingLimit = 3, budget?: number, connections = 2) {
  const load = new StatementLoad(connections);
  const admission = new Admission(load, { waitingLimit, budget });
  const order: number[] = [];
  const enter = (id: number, weight = 1): void => {
    const waiting = admission.enter(weight);
    if (waiting) void waiting.then(() => order.push(id));
    else order.push(id);
  };
  return { load, admission, order, enter };
}

describe('Admission', () => {
  it('lets requests on at once while a connection is free', () => {
    const { load, order, enter } = admissions();
    enter(1);
    load.started();
    enter(2);
    expect(order).toEqual([1, 2]);
  });

  it('holds requests while every connection has a statement, and lets them in in arrival order, one a turn, as connections free', async () => {
    const { load, admission, order, enter } = admissions();
    load.started();
    load.started();
    enter(1);
    enter(2);
    await turn();
    expect(order).toEqual([]);
    expect(admission.queued).toBe(2);

    // One statement answered: the first goes on and sends a statement of its own before the next is weighed.
    load.settled();
    await Promise.resolve();
    expect(order).toEqual([1]);
    load.started();
    await turn();
    expect(order).toEqual([1]);

    load.settled();
    await turn();
    expect(order).toEqual([1, 2]);
    expect(admission.queued).toBe(0);
  });

  it('goes on letting requests in when those let in send no statement (a login waiting for its hash)', async () => {
    const { load, order, enter } = admissions();
    load.started();
    load.started();
    enter(1);
    enter(2);
    enter(3);
    load.settled();
    for (let i = 0; i < 3; i += 1) await turn();
    expect(order).toEqual([1, 2, 3]);
  });

  it('keeps arrival order: a request that arrives while others wait waits behind them, even with a connection free', async () => {
    const { load, order, enter } = admissions();
    load.started();
    load.started();
    enter(1);
    enter(2);
    load.settled();
    enter(3);
    for (let i = 0; i < 3; i += 1) await turn();
    expect(order).toEqual([1, 2, 3]);
  });

  it('refuses a request past the limit of waiting ones with SERVICE_UNAVAILABLE and a Retry-After', () => {
    const { load, admission, enter } = admissions(2);
    load.started();
    load.started();
    enter(1);
    enter(2);
    let refused: unknown;
    try {
      void admission.enter();
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryAfter: 1 });
    expect(admission.queued).toBe(2);
  });

  it('lets a request whose client went away leave the queue at once: it is never let in, and the next takes its place', async () => {
    const { load, admission, order, enter } = admissions(2);
    load.started();
    load.started();
    const client = new AbortController();
    let admitted: boolean | undefined;
    void admission.enter(1, client.signal)?.then((answer) => (admitted = answer));
    enter(2);
    expect(admission.queued).toBe(2);

    client.abort();
    await turn();
    expect(admitted).toBe(false);
    expect(admission.queued).toBe(1);
    // Room again under the limit.
    enter(3);
    expect(admission.queued).toBe(2);

    load.settled();
    load.settled();
    for (let i = 0; i < 3; i += 1) await turn();
    expect(order).toEqual([2, 3]);
    expect(admitted).toBe(false);
  });

  it('holds a request that would take what those let in weigh past the budget, and lets it in once enough of them are answered', async () => {
    const { admission, order, enter } = admissions(3, 10);
    enter(1, 6);
    enter(2, 6);
    // Arrival order: a light one waits behind the heavy one, though it would fit.
    enter(3, 1);
    await turn();
    expect(order).toEqual([1]);
    expect(admission.queued).toBe(2);

    admission.leave(6);
    for (let i = 0; i < 2; i += 1) await turn();
    expect(order).toEqual([1, 2, 3]);
    expect(admission.queued).toBe(0);
    // 6 + 1 let in: a request of 3 still fits, one more of 1 does not.
    enter(4, 3);
    enter(5, 1);
    await turn();
    expect(order).toEqual([1, 2, 3, 4]);
    admission.leave(1);
    await turn();
    expect(order).toEqual([1, 2, 3, 4, 5]);
  });

  it('lets a request that weighs more than the budget in alone, once nothing else is in', async () => {
    const { admission, order, enter } = admissions(3, 10);
    enter(1, 2);
    enter(2, 50);
    await turn();
    expect(order).toEqual([1]);
    admission.leave(2);
    await turn();
    expect(order).toEqual([1, 2]);
    enter(3, 1);
    await turn();
    expect(order).toEqual([1, 2]);
    admission.leave(50);
    await turn();
    expect(order).toEqual([1, 2, 3]);
  });

  it('lets the next in when the first waiting leaves the queue: it may fit where the first did not', async () => {
    const { admission, order, enter } = admissions(3, 10);
    enter(1, 8);
    const client = new AbortController();
    void admission.enter(5, client.signal);
    enter(2, 2);
    await turn();
    expect(order).toEqual([1]);
    client.abort();
    await turn();
    expect(order).toEqual([1, 2]);
    expect(admission.queued).toBe(0);
  });

  it('has no budget without connections to count (SQLite): nothing waits', () => {
    const { order, enter } = admissions(3, 10, Infinity);
    for (let i = 1; i <= 5; i += 1) enter(i, 6);
    expect(order).toEqual([1, 2, 3, 4, 5]);
  });

  it('is never busy without connections to count (SQLite)', () => {
    const load = new StatementLoad(Infinity);
    for (let i = 0; i < 1000; i += 1) load.started();
    expect(load.busy).toBe(false);
  });
});

import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

/** Subscribing to creature events with graphql-ws's own client, as a frontend would. */

export const EVENTS =
  'subscription($trainerId: ID!) { creatureEvents(trainerId: $trainerId) { kind at sequence creature { id name level trainer { id } } } }';

/** The same, resumed after the last sequence seen (`after`). */
export const RESUMED_EVENTS =
  'subscription($trainerId: ID!, $after: Int) { creatureEvents(trainerId: $trainerId, after: $after) { kind at sequence creature { id name level trainer { id } } } }';

export interface Received {
  kind: string;
  at: string;
  sequence: number;
  creature: { id: string; name: string; level: number; trainer: { id: string } };
}

export interface Watch {
  events: Received[];
  errors: { message: string; extensions?: { code?: string } }[];
  /** Resolves with the close code when the socket closes. */
  closed: Promise<number>;
  client: Client;
  /** Resolves when the server has acknowledged the subscription's connection. */
  connected: Promise<void>;
  /** The server completed the subscription (after an error, or the trainer's deletion). */
  completed?: boolean;
}

/** One socket with one `creatureEvents` subscription (or `query`), collecting what arrives. */
export function watch(
  origin: string,
  token: string | undefined,
  trainerId: string,
  query = EVENTS,
  variables: Record<string, unknown> = {},
): Watch {
  let onClosed!: (code: number) => void;
  let onConnected!: () => void;
  const closed = new Promise<number>((resolve) => (onClosed = resolve));
  const connected = new Promise<void>((resolve) => (onConnected = resolve));
  const client = createClient({
    url: `${origin.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: token === undefined ? {} : { authorization: `Bearer ${token}` },
    retryAttempts: 0,
    lazy: false,
    // Closes are what these tests look at; the client would print each one.
    onNonLazyError: () => undefined,
    on: {
      closed: (event) => onClosed((event as { code: number }).code),
      connected: () => onConnected(),
    },
  });
  const result: Watch = { events: [], errors: [], closed, client, connected };
  client.subscribe<{ creatureEvents: Received }>(
    { query, variables: { trainerId, ...variables } },
    {
      next: (value) => {
        if (value.data) result.events.push(value.data.creatureEvents);
        if (value.errors) result.errors.push(...(value.errors as Watch['errors']));
      },
      error: (error) => {
        if (Array.isArray(error)) result.errors.push(...(error as Watch['errors']));
      },
      complete: () => void (result.completed = true),
    },
  );
  return result;
}

export async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

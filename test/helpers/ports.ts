import { createServer, type Server } from 'node:net';

/**
 * Ports are picked from this range: below Linux's default range of ports the kernel gives
 * outgoing connections (32768-60999), so no client connection takes one between the pick and the
 * server's bind (nor when a server is started again on its port), and above every port `fetch`
 * refuses to call (the Fetch standard's "bad ports", 6665-6669 among them, the highest 10080),
 * which a port picked anywhere could be.
 */
const FIRST = 20_000;
const LAST = 32_000;

/** Listens on `port` of 127.0.0.1: the server, or undefined when the port is taken. */
function hold(port: number): Promise<Server | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** `count` distinct free ports of 127.0.0.1 (see FIRST), all held at once while they are picked. */
export async function freePorts(count: number): Promise<number[]> {
  const held: Server[] = [];
  const ports: number[] = [];
  try {
    for (let tries = 0; ports.length < count; tries += 1) {
      if (tries > 1000) throw new Error(`no ${count} free ports between ${FIRST} and ${LAST}`);
      const port = FIRST + Math.floor(Math.random() * (LAST - FIRST));
      if (ports.includes(port)) continue;
      const server = await hold(port);
      if (!server) continue;
      held.push(server);
      ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(held.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

/** One free port of 127.0.0.1 (see freePorts). */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port;
}

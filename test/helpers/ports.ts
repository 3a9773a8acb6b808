import { createServer, type Server } from 'node:net';

/**
 * `count` distinct free ports of 127.0.0.1, chosen by the kernel and all held at once while they
 * are picked. Ports the kernel hands out are never among those `fetch` refuses to call (6665-6669
 * and the other "bad ports" of the Fetch standard), which a port picked at random can be.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Server>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as { port: number }).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/** One free port of 127.0.0.1 (see freePorts). */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port;
}

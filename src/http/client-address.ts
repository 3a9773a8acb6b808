import proxyAddr from '@fastify/proxy-addr';
import type { IncomingMessage } from 'node:http';
import type { Config } from '../config';

/** Which hops of X-Forwarded-For to believe, as TRUST_PROXY says (Fastify's `trustProxy` takes the same). */
export function trustedProxies(trustProxy: Config['trustProxy']): boolean | string | ((address: string, hop: number) => boolean) {
  return typeof trustProxy === 'number' ? (_address: string, hop: number) => hop < trustProxy : trustProxy;
}

/**
 * The client address of a raw request (a WebSocket upgrade, which Fastify never sees), as
 * Fastify's `request.ip` computes it for the same TRUST_PROXY: behind a load balancer, the
 * per-address limits must count clients, not the balancer.
 */
export function clientAddressOf(trustProxy: Config['trustProxy']): (request: IncomingMessage) => string {
  const trusted = trustedProxies(trustProxy);
  const trust =
    typeof trusted === 'function'
      ? trusted
      : trusted === true
        ? () => true
        : trusted === false
          ? () => false
          : proxyAddr.compile(trusted.split(',').map((entry) => entry.trim()));
  return (request) => {
    const addresses = proxyAddr.all(request, trust);
    return addresses[addresses.length - 1] ?? '';
  };
}

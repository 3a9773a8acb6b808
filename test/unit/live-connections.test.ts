import { LiveConnections } from '../../src/graphql/live-connections';
import type { Services } from '../../src/services';

// Only what LiveConnections uses of the services: the notices of ended sessions.
const services = { sessionEndings: { subscribe: () => () => undefined } } as unknown as Services;

describe('LiveConnections.refusal', () => {
  it('takes a connection with a listed origin or none, and refuses another origin with 403', () => {
    const live = new LiveConnections(services, ['https://app.example.com']);
    try {
      expect(live.refusal('127.0.0.1', 'https://app.example.com')).toBeUndefined();
      expect(live.refusal('127.0.0.1', undefined)).toBeUndefined();
      expect(live.refusal('127.0.0.1', 'https://evil.example')).toBe(403);
    } finally {
      live.stop();
    }
  });

  it('tells a page of another origin 403 even while shutting down, where the others get 503 (which invites a retry)', () => {
    const live = new LiveConnections(services, ['https://app.example.com']);
    live.stop();
    expect(live.refusal('127.0.0.1', 'https://evil.example')).toBe(403);
    expect(live.refusal('127.0.0.1', 'https://app.example.com')).toBe(503);
    expect(live.refusal('127.0.0.1', undefined)).toBe(503);
  });

  it('takes any origin when CORS_ORIGINS is empty', () => {
    const live = new LiveConnections(services, []);
    try {
      expect(live.refusal('127.0.0.1', 'https://anywhere.example')).toBeUndefined();
    } finally {
      live.stop();
    }
  });
});

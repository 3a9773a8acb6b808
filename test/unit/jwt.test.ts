import { createHmac } from 'node:crypto';
import { TokenIssuer } from '../../src/auth/jwt';

const SECRET = 'unit-test-secret-that-is-long-enough-0123456789';

describe('TokenIssuer', () => {
  it('accepts a token it issued until the second it expires, also once it has been verified before', () => {
    const issuer = new TokenIssuer(SECRET, 60);
    const { token, expiresAt } = issuer.issue(42, 9);
    expect(issuer.verify(token)).toEqual(expect.objectContaining({ trainerId: 42, sessionId: 9 }));
    expect(issuer.verify(token, expiresAt.getTime() - 1)).toEqual(expect.objectContaining({ trainerId: 42, sessionId: 9 }));
    expect(issuer.verify(token, expiresAt.getTime())).toBeUndefined();
  });

  it('refuses a correctly signed token without a session id (as issued before sessions existed)', () => {
    const issuer = new TokenIssuer(SECRET, 60);
    const [header, payload] = issuer.issue(42, 9).token.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const signed = (body: Record<string, unknown>) => {
      const unsigned = `${header}.${Buffer.from(JSON.stringify(body)).toString('base64url')}`;
      return `${unsigned}.${createHmac('sha256', SECRET).update(unsigned).digest('base64url')}`;
    };
    expect(issuer.verify(signed(claims))?.sessionId).toBe(9);
    const { sid: _sid, ...withoutSid } = claims;
    expect(issuer.verify(signed(withoutSid))).toBeUndefined();
    expect(issuer.verify(signed({ ...claims, sid: 9 }))).toBeUndefined();
    expect(issuer.verify(signed({ ...claims, sid: '0' }))).toBeUndefined();
  });

  it('refuses a token altered after an intact copy was verified', () => {
    const issuer = new TokenIssuer(SECRET, 60);
    const { token } = issuer.issue(7, 1);
    expect(issuer.verify(token)?.trainerId).toBe(7);
    const [header, , signature] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ sub: '8', iss: 'creature-registry', aud: 'creature-registry', exp: 9999999999 })).toString(
      'base64url',
    );
    expect(issuer.verify(`${header}.${forged}.${signature}`)).toBeUndefined();
    expect(issuer.verify(`${token}x`)).toBeUndefined();
  });

  it('refuses tokens signed with another secret', () => {
    const { token } = new TokenIssuer(`${SECRET}-other`, 60).issue(5, 1);
    expect(new TokenIssuer(SECRET, 60).verify(token)).toBeUndefined();
  });
});

import { TokenIssuer } from '../../src/auth/jwt';

const SECRET = 'unit-test-secret-that-is-long-enough-0123456789';

describe('TokenIssuer', () => {
  it('accepts a token it issued until the second it expires, also once it has been verified before', () => {
    const issuer = new TokenIssuer(SECRET, 60);
    const { token, expiresAt } = issuer.issue(42);
    expect(issuer.verify(token)).toBe(42);
    expect(issuer.verify(token, expiresAt.getTime() - 1)).toBe(42);
    expect(issuer.verify(token, expiresAt.getTime())).toBeUndefined();
  });

  it('refuses a token altered after an intact copy was verified', () => {
    const issuer = new TokenIssuer(SECRET, 60);
    const { token } = issuer.issue(7);
    expect(issuer.verify(token)).toBe(7);
    const [header, , signature] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ sub: '8', iss: 'creature-registry', aud: 'creature-registry', exp: 9999999999 })).toString(
      'base64url',
    );
    expect(issuer.verify(`${header}.${forged}.${signature}`)).toBeUndefined();
    expect(issuer.verify(`${token}x`)).toBeUndefined();
  });

  it('refuses tokens signed with another secret', () => {
    const { token } = new TokenIssuer(`${SECRET}-other`, 60).issue(5);
    expect(new TokenIssuer(SECRET, 60).verify(token)).toBeUndefined();
  });
});

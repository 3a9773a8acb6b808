import { randomBytes, scryptSync } from 'node:crypto';
import { PasswordHasher } from '../../src/auth/password';

const hasher = new PasswordHasher();

describe('password hashing', () => {
  it('stores OWASP scrypt parameters (N=2^15, r=8, p=3) in the hash and verifies the password against it', async () => {
    const stored = await hasher.hash('pikachu-pikachu');
    expect(stored).toMatch(/^scrypt\$32768\$8\$3\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    await expect(hasher.verify('pikachu-pikachu', stored)).resolves.toBe(true);
    await expect(hasher.verify('pikachu-pikachX', stored)).resolves.toBe(false);
  });

  it('still accepts passwords hashed with other OWASP parameters (N=2^13, r=8, p=10)', async () => {
    const salt = randomBytes(16);
    const key = scryptSync('old-password-1', salt, 32, { N: 2 ** 13, r: 8, p: 10, maxmem: 64 * 1024 * 1024 });
    const stored = ['scrypt', 8192, 8, 10, salt.toString('base64url'), key.toString('base64url')].join('$');
    await expect(hasher.verify('old-password-1', stored)).resolves.toBe(true);
    await expect(hasher.verify('old-password-2', stored)).resolves.toBe(false);
  });
});

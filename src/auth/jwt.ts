import jwt from 'jsonwebtoken';
import { createSecretKey, type KeyObject } from 'node:crypto';
import { parseId } from '../common/validation';

/** The only module that touches jsonwebtoken: algorithm pinned, every claim set and required. */
const JWT_ISSUER = 'creature-registry';
const JWT_AUDIENCE = 'creature-registry';
const ALGORITHM = 'HS256';
/** How many verified tokens are remembered (about 3 MB at most). */
const VERIFIED_TOKENS = 10_000;

export interface IssuedToken {
  readonly token: string;
  readonly expiresAt: Date;
}

export class TokenIssuer {
  /*
   * A KeyObject made once: given a string, jsonwebtoken first tries to read it as a PEM public
   * key on every call and builds the secret key from the error, which was a third of the CPU
   * of a GraphQL trainer(id) (node --cpu-prof).
   */
  private readonly secret: KeyObject;
  /**
   * Tokens already verified, with their trainer and expiry: a client sends the same token with
   * every request for its lifetime, and the signature of that exact string cannot change. The
   * expiry is still checked on every use. Bounded (oldest out first).
   */
  private readonly verified = new Map<string, { id: number; expiresAtMs: number }>();

  constructor(
    secret: string,
    private readonly ttlSeconds: number,
  ) {
    this.secret = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  issue(trainerId: number, now = Date.now()): IssuedToken {
    const iat = Math.floor(now / 1000);
    const exp = iat + this.ttlSeconds;
    const token = jwt.sign({ iat, exp }, this.secret, {
      algorithm: ALGORITHM,
      subject: String(trainerId),
      issuer: JWT_ISSUER,
      audience: JWT_AUDIENCE,
    });
    return { token, expiresAt: new Date(exp * 1000) };
  }

  /** The trainer id in a valid token, or undefined for anything else (never throws). */
  verify(token: string, now = Date.now()): number | undefined {
    const known = this.verified.get(token);
    if (known) {
      if (now < known.expiresAtMs) return known.id;
      this.verified.delete(token);
      return undefined;
    }
    const id = this.verifySignature(token);
    if (id !== undefined) {
      if (this.verified.size >= VERIFIED_TOKENS) this.verified.delete(this.verified.keys().next().value!);
      this.verified.set(token, id);
    }
    return id?.id;
  }

  private verifySignature(token: string): { id: number; expiresAtMs: number } | undefined {
    try {
      const payload = jwt.verify(token, this.secret, {
        algorithms: [ALGORITHM],
        issuer: JWT_ISSUER,
        audience: JWT_AUDIENCE,
      });
      if (typeof payload !== 'object' || typeof payload.exp !== 'number') return undefined;
      const id = typeof payload.sub === 'string' ? parseId(payload.sub) : undefined;
      return id === undefined ? undefined : { id, expiresAtMs: payload.exp * 1000 };
    } catch {
      return undefined;
    }
  }
}

/** The token of an `Authorization: Bearer <token>` header; undefined when absent or malformed. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/i.exec(header.trim());
  return match?.[1];
}

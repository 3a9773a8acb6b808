import jwt from 'jsonwebtoken';
import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
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

/** What a valid access token says: whose it is and which session it belongs to (its `sid`). */
export interface TokenClaims {
  readonly trainerId: number;
  readonly sessionId: number;
  /** When the token expires (its `exp`, in milliseconds). */
  readonly expiresAtMs: number;
}

export class TokenIssuer {
  /*
   * A KeyObject made once: given a string, jsonwebtoken first tries to read it as a PEM public
   * key on every call and builds the secret key from the error, which was a third of the CPU
   * of a GraphQL trainer(id) (node --cpu-prof).
   */
  private readonly secret: KeyObject;
  /**
   * Tokens already verified, with their claims and expiry: a client sends the same token with
   * every request for its lifetime, and the signature of that exact string cannot change. The
   * expiry is still checked on every use, and whether its session is still open is the caller
   * check's (RequestAuth), on every request. Bounded (oldest out first).
   */
  private readonly verified = new Map<string, TokenClaims>();

  constructor(
    secret: string,
    private readonly ttlSeconds: number,
  ) {
    this.secret = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  issue(trainerId: number, sessionId: number, now = Date.now()): IssuedToken {
    const iat = Math.floor(now / 1000);
    const exp = iat + this.ttlSeconds;
    // jti: two tokens issued in the same second (a login and a refresh) still differ.
    const token = jwt.sign({ iat, exp, sid: String(sessionId), jti: randomBytes(9).toString('base64url') }, this.secret, {
      algorithm: ALGORITHM,
      subject: String(trainerId),
      issuer: JWT_ISSUER,
      audience: JWT_AUDIENCE,
    });
    return { token, expiresAt: new Date(exp * 1000) };
  }

  /**
   * The claims of a valid token, or undefined for anything else (never throws). A token without
   * a `sid` (issued before sessions existed) is not valid.
   */
  verify(token: string, now = Date.now()): TokenClaims | undefined {
    const known = this.verified.get(token);
    if (known) {
      if (now < known.expiresAtMs) return known;
      this.verified.delete(token);
      return undefined;
    }
    const claims = this.verifySignature(token);
    if (claims === undefined || now >= claims.expiresAtMs) return undefined;
    if (this.verified.size >= VERIFIED_TOKENS) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(token, claims);
    return claims;
  }

  private verifySignature(token: string): TokenClaims | undefined {
    try {
      const payload = jwt.verify(token, this.secret, {
        algorithms: [ALGORITHM],
        issuer: JWT_ISSUER,
        audience: JWT_AUDIENCE,
      });
      if (typeof payload !== 'object' || typeof payload.exp !== 'number') return undefined;
      const trainerId = typeof payload.sub === 'string' ? parseId(payload.sub) : undefined;
      const sessionId = typeof payload.sid === 'string' ? parseSessionId(payload.sid) : undefined;
      if (trainerId === undefined || sessionId === undefined) return undefined;
      return { trainerId, sessionId, expiresAtMs: payload.exp * 1000 };
    } catch {
      return undefined;
    }
  }
}

/** A session id (a BIGINT row id) as the `sid` claim writes it: a positive decimal integer. */
function parseSessionId(text: string): number | undefined {
  if (!/^[1-9]\d{0,15}$/.test(text)) return undefined;
  const id = Number(text);
  return Number.isSafeInteger(id) ? id : undefined;
}

/** The token of an `Authorization: Bearer <token>` header; undefined when absent or malformed. */
export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/i.exec(header.trim());
  return match?.[1];
}

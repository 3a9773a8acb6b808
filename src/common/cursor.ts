import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors';

const SIGNATURE_BYTES = 16;

/**
 * Opaque page cursors: the id a page ended at, signed with a key derived from the token secret,
 * so that a client can pass one back but not forge or alter it (a changed cursor is
 * BAD_USER_INPUT, never a page that starts somewhere else). Ids only grow, so a cursor stays
 * valid while trainers are added: the next page holds the matching trainers after it.
 */
export class CursorCodec {
  private readonly key: Buffer;

  constructor(secret: string, purpose: string) {
    this.key = createHmac('sha256', secret).update(`cursor:${purpose}`).digest();
  }

  private sign(payload: string): Buffer {
    return createHmac('sha256', this.key).update(payload).digest().subarray(0, SIGNATURE_BYTES);
  }

  encode(id: number): string {
    const payload = Buffer.from(String(id)).toString('base64url');
    return `${payload}.${this.sign(payload).toString('base64url')}`;
  }

  /** The id in a cursor this service made; BAD_USER_INPUT for anything else. */
  decode(cursor: string, field = 'after'): number {
    const [payload, signature, extra] = cursor.split('.');
    const given = Buffer.from(signature ?? '', 'base64url');
    const id = Number(Buffer.from(payload ?? '', 'base64url').toString());
    const valid =
      extra === undefined &&
      given.length === SIGNATURE_BYTES &&
      timingSafeEqual(given, this.sign(payload)) &&
      Number.isSafeInteger(id) &&
      id >= 0;
    if (!valid)
      throw new AppError('BAD_USER_INPUT', 'The cursor is malformed or was altered', [
        { field, message: 'is not a cursor this service gave' },
      ]);
    return id;
  }
}

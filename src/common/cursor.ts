import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors';

const SIGNATURE_BYTES = 16;
/** SHA-256's block: HMAC pads its key to it. */
const BLOCK = 64;

/**
 * Opaque page cursors: the id a page ended at, signed with a key derived from the token secret,
 * so that a client can pass one back but not forge or alter it (a changed cursor is
 * BAD_USER_INPUT, never a page that starts somewhere else). Ids only grow, so a cursor stays
 * valid while trainers are added: the next page holds the matching trainers after it.
 */
export class CursorCodec {
  /** HMAC's inner and outer keys: the 32-byte key XOR ipad and XOR opad, padded to a block. */
  private readonly inner = Buffer.alloc(BLOCK, 0x36);
  private readonly outer = Buffer.alloc(BLOCK + 32, 0x5c);

  constructor(secret: string, purpose: string) {
    const key = createHmac('sha256', secret).update(`cursor:${purpose}`).digest();
    for (let i = 0; i < key.length; i += 1) {
      this.inner[i] ^= key[i];
      this.outer[i] ^= key[i];
    }
  }

  /**
   * HMAC-SHA256 of the payload (RFC 2104, as createHmac computes it), cut to SIGNATURE_BYTES, from
   * two one-shot hashes: a REST list signs a cursor per page, and createHmac's object costs
   * several times more than these two calls.
   */
  private sign(payload: string): Buffer {
    const payloadBytes = Buffer.from(payload);
    const inner = hash('sha256', Buffer.concat([this.inner, payloadBytes], BLOCK + payloadBytes.length), 'buffer');
    inner.copy(this.outer, BLOCK);
    return hash('sha256', this.outer, 'buffer').subarray(0, SIGNATURE_BYTES);
  }

  private payloadOf(id: number): string {
    return Buffer.from(String(id)).toString('base64url');
  }

  encode(id: number): string {
    const payload = this.payloadOf(id);
    return `${payload}.${this.sign(payload).toString('base64url')}`;
  }

  /**
   * A page that another follows, with the cursor of its last item, signed when it is first read
   * (a `creatures` field of a page of 100 trainers never reads the cursors of their 100 pages).
   */
  followed<T extends { readonly id: number }>(items: T[]): { items: T[]; readonly nextCursor: string } {
    let cursor: string | undefined;
    const encode = () => this.encode(items[items.length - 1].id);
    return {
      items,
      get nextCursor() {
        return (cursor ??= encode());
      },
    };
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
      id >= 0 &&
      // Only the spelling encode gives: base64 leaves spare bits in a last character, and "042" is 42 too.
      given.toString('base64url') === signature &&
      this.payloadOf(id) === payload;
    if (!valid)
      throw new AppError('BAD_USER_INPUT', 'The cursor is malformed or was altered', [
        { field, message: 'is not a cursor this service gave' },
      ]);
    return id;
  }
}

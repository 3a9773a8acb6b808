import { createHmac } from 'node:crypto';
import { CursorCodec } from '../../src/common/cursor';
import { AppError } from '../../src/errors';

const SECRET = 's'.repeat(32);

/** A cursor as RFC 2104 HMAC-SHA256 makes it through createHmac: what CursorCodec must keep giving. */
function reference(secret: string, purpose: string, id: number | string): string {
  const key = createHmac('sha256', secret).update(`cursor:${purpose}`).digest();
  const payload = Buffer.from(String(id)).toString('base64url');
  return `${payload}.${createHmac('sha256', key).update(payload).digest().subarray(0, 16).toString('base64url')}`;
}

const refusal = (codec: CursorCodec, cursor: string): unknown => {
  try {
    codec.decode(cursor);
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('CursorCodec', () => {
  const codec = new CursorCodec(SECRET, 'trainers');

  it('signs with HMAC-SHA256, so cursors handed out before stay valid', () => {
    for (const id of [0, 1, 9, 20, 12345, 99999, 2147483647]) {
      expect(codec.encode(id)).toBe(reference(SECRET, 'trainers', id));
      expect(codec.decode(reference(SECRET, 'trainers', id))).toBe(id);
    }
  });

  it('refuses a cursor with a changed id, signature, secret or purpose as BAD_USER_INPUT', () => {
    const good = codec.encode(42);
    const [payload, signature] = good.split('.');
    const forged = [
      `${Buffer.from('43').toString('base64url')}.${signature}`,
      `${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`,
      // The same bytes spelt otherwise: a spare bit of the last character, a leading zero.
      `${payload}.${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`,
      reference(SECRET, 'trainers', '042'),
      reference('t'.repeat(32), 'trainers', 42),
      reference(SECRET, 'creatures', 42),
      `${good}.x`,
      'ü.ü',
      '',
    ];
    for (const cursor of forged) {
      const error = refusal(codec, cursor);
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).code).toBe('BAD_USER_INPUT');
    }
  });

  it('signs the cursor of a followed page when it is first read, once, for its last item', () => {
    const encode = jest.spyOn(codec, 'encode');
    const page = codec.followed([{ id: 7 }, { id: 9 }]);
    expect(encode).not.toHaveBeenCalled();
    const cursor = page.nextCursor;
    expect([codec.decode(cursor), page.nextCursor]).toEqual([9, cursor]);
    expect(encode).toHaveBeenCalledTimes(1);
    encode.mockRestore();
  });
});

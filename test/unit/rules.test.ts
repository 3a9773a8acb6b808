import fc from 'fast-check';
import { EMAIL_PATTERN, HIDDEN, inRanges, MARKS, matches, namePattern, PASSWORD_PATTERN, SPACES } from '../../src/common/rules';
import { nameKey } from '../../src/common/text';

/*
 * The input rules are written as portable regular expressions (openapi.json publishes them).
 * Here they are held against their definitions in Unicode terms, which only JavaScript's
 * property escapes can state.
 */

const HIDDEN_BY_PROPERTY = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Noncharacter_Code_Point}\p{Cs}\u2800\p{Default_Ignorable_Code_Point}]/u;

const codePoints = (text: string) => [...text];

/** The name rule as the contract words it: trimmed of spaces, 1..max characters, nothing hidden, no combining mark first. */
function nameByDefinition(value: string, max: number): boolean {
  if (!value.isWellFormed() || codePoints(value).some((c) => HIDDEN_BY_PROPERTY.test(c))) return false;
  const trimmed = codePoints(value.trim());
  return trimmed.length >= 1 && trimmed.length <= max && !/\p{M}/u.test(trimmed[0]);
}

/** Strings mixing what names are made of: letters, spaces of every kind, hidden and astral characters, marks. */
const nameish = fc
  .array(
    fc.oneof(
      fc.constantFrom('a', 'Z', 'é', 'e\u0301', 'ß', 'ẞ', 'ﬀ', 'Ｍ', '山', '🐉', '❤', '❤️', '\uFDFA', '\u0958', 'ı', 'İ', 'ς', 'Σ'),
      fc.constantFrom('\u0301', '\u0903', '\u20DD', '\u{1D165}', '\uFE00', '\uFE0F', '\u{E0100}', '\u{E01EF}'),
      fc.constantFrom(' ', '\u00A0', '\u1680', '\u2003', '\u202F', '\u3000', '\t', '\n', '\u2028', '\uFEFF'),
      fc.constantFrom(
        '\u200D',
        '\u200B',
        '\u202E',
        '\u2066',
        '\u3164',
        '\u115F',
        '\u1160',
        '\uFFA0',
        '\u034F',
        '\u{E0041}',
        '\u0085',
        '\uD800',
      ),
      fc.string({ unit: 'binary', maxLength: 3 }),
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(''));

describe('the input rules', () => {
  it('list as hidden exactly the code points that Unicode properties call hidden', () => {
    const differing: string[] = [];
    for (let code = 0; code <= 0x10ffff; code += 1) {
      const byProperty = HIDDEN_BY_PROPERTY.test(String.fromCodePoint(code));
      if (byProperty !== inRanges(HIDDEN, code)) differing.push(code.toString(16));
    }
    expect(differing).toEqual([]);
  });

  it('list as combining marks exactly the Unicode marks (M)', () => {
    const differing: string[] = [];
    for (let code = 0; code <= 0x10ffff; code += 1) {
      if (/\p{M}/u.test(String.fromCodePoint(code)) !== inRanges(MARKS, code)) differing.push(code.toString(16));
    }
    expect(differing).toEqual([]);
  });

  it('refuse variation selectors and tag characters anywhere in a name, and a combining mark first', () => {
    const name = (value: string) => matches(namePattern(32), value);
    for (const bad of [
      'Mew\uFE00',
      'Mew\u{E0100}',
      `Mew${'\u{E0101}'.repeat(29)}`,
      'Ab \uFE0F',
      '\uFE0FAb',
      'M\uFE0Few',
      '❤️',
      'Mew\u{E0041}',
      'Mew\u{E007F}',
      '\u0301',
      ' \u0301Mew',
      '\u0903a',
      '\u20DD',
    ]) {
      expect([bad, name(bad)]).toEqual([bad, false]);
    }
    for (const good of ['Mew', '❤', 'e\u0301', 'Mew\u0301', 'Ab \u0301', ' é ']) expect([good, name(good)]).toEqual([good, true]);
  });

  it('list as spaces exactly the Unicode space separators (Zs), which trimming removes', () => {
    const differing: string[] = [];
    for (let code = 0; code <= 0x10ffff; code += 1) {
      const char = String.fromCodePoint(code);
      const listed = inRanges(SPACES, code);
      if (/\p{Zs}/u.test(char) !== listed || (listed && char.trim() !== '')) differing.push(code.toString(16));
    }
    expect(differing).toEqual([]);
  });

  it.each([32, 64])('accept a name of up to %i characters exactly when the definition does', (max) => {
    fc.assert(
      fc.property(nameish, (value) => matches(namePattern(max), value) === nameByDefinition(value, max)),
      { numRuns: 5000 },
    );
    expect(matches(namePattern(max), ` ${'a'.repeat(max)}\u3000`)).toBe(true);
    expect(matches(namePattern(max), 'a'.repeat(max + 1))).toBe(false);
    expect(matches(namePattern(max), 'Ash Ketchum')).toBe(true);
    expect(matches(namePattern(max), '   ')).toBe(false);
  });

  it('take the HTML standard’s email addresses with a dot in the domain, and nothing else', () => {
    const email = (value: string) => matches(EMAIL_PATTERN, value);
    for (const good of ['ash@example.com', "o'neil+tag@mail.example.co.uk", 'a.b-c_d@x-y.io', 'UPPER@EXAMPLE.COM'])
      expect(email(good)).toBe(true);
    for (const bad of [
      'ash',
      'ash@localhost',
      '@example.com',
      'ash@-x.com',
      'ash@x-.com',
      'a b@x.com',
      ' ash@x.com',
      'üser@x.com',
      `${'a'.repeat(65)}@x.com`,
      'ash@x..com',
    ]) {
      expect([bad, email(bad)]).toEqual([bad, false]);
    }
  });

  it('refuse passwords with controls, bidi overrides or lone surrogates, and take any other character', () => {
    for (const bad of ['secret\u0000', 'tab\there', 'abc\u202Edef', 'lone\uD800', 'nl\u0085x'])
      expect(matches(PASSWORD_PATTERN, bad)).toBe(false);
    for (const good of ['correct horse', 'pässwörd 🐉', 'zwj\u200Dok', '\u3164filler']) expect(matches(PASSWORD_PATTERN, good)).toBe(true);
  });

  it('give one key to names Unicode full case folding makes equal, and keep the dotless ı apart', () => {
    const same = [
      ['ẞ', 'ß', 'ss', 'SS', 'sS'],
      ['ﬀ', 'ff', 'FF'],
      ['Ｍｅｗ', 'Mew', 'MEW'],
      ['οδυσσευς', 'ΟΔΥΣΣΕΥΣ', 'οδυσσευσ'],
      ['ǅ', 'ǆ', 'Ǆ', 'dž'],
      ['K', 'K', 'k'],
      ['é', 'e\u0301', 'É'],
    ];
    for (const group of same) expect(new Set(group.map(nameKey)).size).toBe(1);
    expect(nameKey('ı')).not.toBe(nameKey('i'));
    // Names stored before variation selectors and tags were refused collide with the name without them.
    expect(
      new Set(['Mew', 'Mew\uFE00', 'Mew\u{E0100}', `Mew${'\u{E0101}'.repeat(29)}`, 'Me\u{E0041}w', 'MEW\uFE0F'].map(nameKey)).size,
    ).toBe(1);
    expect(nameKey('Ab \uFE0F')).toBe(nameKey('Ab'));
    expect(nameKey('\uFE0F Ab')).toBe(nameKey('Ab'));
    expect(nameKey('e\uFE00\u0301')).toBe(nameKey('é'));
    expect(nameKey('İ')).not.toBe(nameKey('i'));
  });
});

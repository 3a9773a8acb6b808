/*
 * One normalisation for every piece of user text, applied before it is checked and stored,
 * so that what was validated is exactly what reaches the database (lengths included).
 */

/** Trimmed and in Unicode NFC, as names are stored. */
export const normalizeText = (value: string): string => value.trim().normalize('NFC');

/** As emails are stored and looked up: trimmed, NFC, lower-cased. */
export const normalizeEmail = (value: string): string => normalizeText(value).toLowerCase();

const DOTLESS_I = '\u0131';

/**
 * The identity of a name, for uniqueness: NFKC, then full Unicode case folding (so `ẞ`, `ß`, `SS`
 * and `ss` are one name, `ﬀ` is `ff`, full-width `Ａ` is `A`), then NFKC again. JavaScript has no
 * case folding, so it is built from upper- then lower-casing, repeated until nothing changes
 * (`ẞ` lower-cases to `ß`, which upper-cases to `SS`; three rounds at most), with the two places
 * where that differs from Unicode's CaseFolding.txt put right: the dotless `ı` stays itself
 * (upper-casing would make it `i`), and the final `ς` folds to `σ` wherever it stands.
 * Checked for every code point against Python's `str.casefold` (see docs/architecture.md).
 * A key can be 18 times longer than its name (U+FDFA becomes 18 code points): see MAX_NAME_KEY.
 */
export function nameKey(value: string): string {
  let key = value.normalize('NFKC');
  for (let round = 0; round < 4; round += 1) {
    const next = key
      .split(DOTLESS_I)
      .map((part) => part.toUpperCase().toLowerCase())
      .join(DOTLESS_I)
      .normalize('NFKC');
    if (next === key) break;
    key = next;
  }
  return key.replaceAll('\u03C2', '\u03C3');
}

/** The longest key a name of `length` code points can have (U+FDFA: one code point, 18 in NFKC). */
export const maxNameKey = (length: number): number => length * 18;

/** C0 and C1 controls, bidirectional overrides and isolates (text-spoofing), and noncharacters. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARS = /[\u0000-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069\uFFFE\uFFFF]/;

/** Well-formed UTF-16 (no lone surrogates, which databases would silently replace) without control characters. */
export const isCleanText = (value: string): boolean => value.isWellFormed() && !CONTROL_CHARS.test(value);

/** Has at least one character that shows: not only spaces and invisible format characters. */
export const isVisible = (value: string): boolean => /[^\p{Z}\p{Cf}\s]/u.test(value);

/**
 * What a name may not hold anywhere: controls, format characters (zero-width joiners, bidi
 * overrides, tags), line and paragraph separators, noncharacters, and the other default-ignorable
 * code points, which show nothing (the Hangul fillers U+115F, U+1160, U+3164, U+FFA0, U+034F,
 * U+180B..U+180F), plus the blank braille pattern U+2800. Variation selectors stay allowed: an
 * emoji such as `❤️` needs one.
 */
const HIDDEN_IN_NAMES =
  /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Noncharacter_Code_Point}\u2800]|(?![\uFE00-\uFE0F\u{E0100}-\u{E01EF}])\p{Default_Ignorable_Code_Point}/u;

/** A name as the contract allows it: clean text (see isCleanText) without hidden characters. */
export const isNameText = (value: string): boolean => isCleanText(value) && !HIDDEN_IN_NAMES.test(value);

export const codePoints = (value: string): number => [...value].length;

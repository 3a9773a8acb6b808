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
 * What a key leaves out: variation selectors (U+FE00..U+FE0F, U+E0100..U+E01EF) and tag
 * characters (U+E0000..U+E007F), which change nothing a reader sees. Names may no longer hold
 * them, but rows stored before may, and must collide with the name without them.
 */
const INVISIBLE_IN_KEYS = /[\uFE00-\uFE0F]|[\u{E0000}-\u{E007F}]|[\u{E0100}-\u{E01EF}]/gu;

/**
 * The identity of a name, for uniqueness: NFKC, then full Unicode case folding (so `ẞ`, `ß`, `SS`
 * and `ss` are one name, `ﬀ` is `ff`, full-width `Ａ` is `A`), then NFKC again. JavaScript has no
 * case folding, so it is built from upper- then lower-casing, repeated until nothing changes
 * (`ẞ` lower-cases to `ß`, which upper-cases to `SS`; three rounds at most), with the two places
 * where that differs from Unicode's CaseFolding.txt put right: the dotless `ı` stays itself
 * (upper-casing would make it `i`), and the final `ς` folds to `σ` wherever it stands.
 * Checked for every code point against Python's `str.casefold` (see docs/architecture.md).
 * Variation selectors and tag characters are dropped first, and the spaces that uncovers at
 * either end trimmed (`Ab` + space + U+FE0F is `Ab`).
 * A key can be 18 times longer than its name (U+FDFA becomes 18 code points): see MAX_NAME_KEY.
 */
export function nameKey(value: string): string {
  let key = value.replace(INVISIBLE_IN_KEYS, '').trim().normalize('NFKC');
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

/**
 * The longest a name of `length` code points can be once stored in NFC: lengths count the text as
 * sent, and NFC can make one code point three (U+FB2C, U+1D160), so columns are three times wider.
 */
export const storedLength = (length: number): number => length * 3;

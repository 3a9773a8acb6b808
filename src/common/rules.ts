/*
 * The value rules of every text input, as regular expressions that mean the same in JavaScript
 * (with the `u` flag, as Ajv and the validators here use them) and in other engines that read
 * openapi.json (Python's `re`, Java, .NET): only `\uXXXX` escapes and literal characters, no
 * `\s`, `\p{...}` or `\u{...}`. The service checks exactly these (class-validator for both
 * transports, Ajv for REST bodies), and openapi.json publishes them, so a request generated from
 * the document is accepted and one that breaks a rule is refused.
 */

type Range = readonly [number, number];

/**
 * Code points no name may hold: controls (Cc), format characters (Cf: zero-width joiners and
 * spaces, bidi overrides and isolates, tags), line and paragraph separators, noncharacters, lone
 * surrogates, the other default-ignorable code points, which show nothing (Hangul fillers U+115F,
 * U+1160, U+3164, U+FFA0; U+034F; U+180B..U+180F), and the blank braille pattern U+2800.
 * Variation selectors are allowed (an emoji such as `❤️` needs one). Listed rather than
 * written with `\p{...}`, which other engines lack; test/unit/rules.test.ts derives the list from
 * Node's Unicode properties and fails when it changes.
 */
// prettier-ignore
export const HIDDEN: readonly Range[] = [
  [0x0, 0x1f], [0x7f, 0x9f], [0xad, 0xad], [0x34f, 0x34f], [0x600, 0x605], [0x61c, 0x61c], [0x6dd, 0x6dd],
  [0x70f, 0x70f], [0x890, 0x891], [0x8e2, 0x8e2], [0x115f, 0x1160], [0x17b4, 0x17b5], [0x180b, 0x180f],
  [0x200b, 0x200f], [0x2028, 0x202e], [0x2060, 0x206f], [0x2800, 0x2800], [0x3164, 0x3164], [0xd800, 0xdfff],
  [0xfdd0, 0xfdef], [0xfeff, 0xfeff], [0xffa0, 0xffa0], [0xfff0, 0xfffb], [0xfffe, 0xffff], [0x110bd, 0x110bd],
  [0x110cd, 0x110cd], [0x13430, 0x1343f], [0x1bca0, 0x1bca3], [0x1d173, 0x1d17a], [0x1fffe, 0x1ffff],
  [0x2fffe, 0x2ffff], [0x3fffe, 0x3ffff], [0x4fffe, 0x4ffff], [0x5fffe, 0x5ffff], [0x6fffe, 0x6ffff],
  [0x7fffe, 0x7ffff], [0x8fffe, 0x8ffff], [0x9fffe, 0x9ffff], [0xafffe, 0xaffff], [0xbfffe, 0xbffff],
  [0xcfffe, 0xcffff], [0xdfffe, 0xe00ff], [0xe01f0, 0xe0fff], [0xefffe, 0xeffff], [0xffffe, 0xfffff],
  [0x10fffe, 0x10ffff],
];

/** The spaces (Unicode Zs) a name may have around it, which are trimmed, and inside it. */
// prettier-ignore
export const SPACES: readonly Range[] = [
  [0x20, 0x20], [0xa0, 0xa0], [0x1680, 0x1680], [0x2000, 0x200a], [0x202f, 0x202f], [0x205f, 0x205f], [0x3000, 0x3000],
];

/**
 * What a password may not hold: C0 and C1 controls (scrypt would take "secret\0" for "secret"),
 * bidi overrides and isolates, U+FFFE/U+FFFF and lone surrogates (databases and hashes would see
 * other bytes than were typed).
 */
// prettier-ignore
const PASSWORD_FORBIDDEN: readonly Range[] = [
  [0x0, 0x1f], [0x7f, 0x9f], [0x202a, 0x202e], [0x2066, 0x2069], [0xd800, 0xdfff], [0xfffe, 0xffff],
];

const SPECIAL_IN_CLASS = new Set(['\\', ']', '[', '^', '-']);

function char(code: number): string {
  if (code > 0xffff) return String.fromCodePoint(code);
  const literal = String.fromCharCode(code);
  if (code > 0x20 && code < 0x7f && !SPECIAL_IN_CLASS.has(literal)) return literal;
  return `\\u${code.toString(16).toUpperCase().padStart(4, '0')}`;
}

const set = (...lists: (readonly Range[])[]): string =>
  lists
    .flat()
    .map(([from, to]) => (from === to ? char(from) : `${char(from)}-${char(to)}`))
    .join('');

export const inRanges = (ranges: readonly Range[], code: number): boolean => ranges.some(([from, to]) => code >= from && code <= to);

/**
 * A name of 1..max characters once the spaces around it are trimmed, counted in code points as
 * sent, with nothing hidden in it: it starts and ends (after trimming) with a character that
 * shows. Surrounding spaces do not count.
 */
export function namePattern(max: number): string {
  const space = `[${set(SPACES)}]`;
  const shows = `[^${set(HIDDEN, SPACES)}]`;
  const any = `[^${set(HIDDEN)}]`;
  return `^${space}*${shows}(?:${any}{0,${max - 2}}${shows})?${space}*$`;
}

export const NICKNAME_PATTERN = '^[A-Za-z0-9_.-]{3,32}$';

/**
 * The HTML standard's "valid email address" (what `<input type="email">` accepts), with at
 * least one dot in the domain and at most 64 characters before the `@`. ASCII only, so that
 * lower-casing (how emails are stored and compared) keeps its length.
 */
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
export const EMAIL_PATTERN = `^[A-Za-z0-9.!#$%&'*+/=?^_\`{|}~-]{1,64}@${LABEL}(?:\\.${LABEL})+$`;
export const MAX_EMAIL = 254;

export const PASSWORD_PATTERN = `^[^${set(PASSWORD_FORBIDDEN)}]*$`;
export const MIN_PASSWORD = 8;
export const MAX_PASSWORD = 128;

const compiled = new Map<string, RegExp>();
/** The pattern as the service runs it (compiled once, with the `u` flag). */
export function matches(pattern: string, value: string): boolean {
  let regex = compiled.get(pattern);
  if (!regex) compiled.set(pattern, (regex = new RegExp(pattern, 'u')));
  return regex.test(value);
}

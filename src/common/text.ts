/*
 * One normalisation for every piece of user text, applied before it is checked and stored,
 * so that what was validated is exactly what reaches the database (lengths included).
 */

/** Trimmed and in Unicode NFC, as names are stored. */
export const normalizeText = (value: string): string => value.trim().normalize('NFC');

/** As emails are stored and looked up: trimmed, NFC, lower-cased. */
export const normalizeEmail = (value: string): string => normalizeText(value).toLowerCase();

/**
 * The case-insensitive identity of a name: a case folding approximated by upper- then
 * lower-casing (so `ß`/`SS` and `ς`/`Σ` are the same), back in NFC. At most three code
 * points per character (`ΐ`), hence the wider key columns.
 */
export const foldCase = (value: string): string => value.toUpperCase().toLowerCase().normalize('NFC');

/** C0 and C1 controls, bidirectional overrides and isolates (text-spoofing), and noncharacters. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARS = /[\u0000-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069\uFFFE\uFFFF]/;

/** Well-formed UTF-16 (no lone surrogates, which databases would silently replace) without control characters. */
export const isCleanText = (value: string): boolean => value.isWellFormed() && !CONTROL_CHARS.test(value);

/** Has at least one character that shows: not only spaces and invisible format characters. */
export const isVisible = (value: string): boolean => /[^\p{Z}\p{Cf}\s]/u.test(value);

export const codePoints = (value: string): number => [...value].length;

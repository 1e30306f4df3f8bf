/**
 * PII found by validated patterns: a candidate counts only when its checksum or structure holds
 * (IBAN mod-97 with the country's length, card numbers by Luhn with a known issuer prefix, US SSN area
 * rules, IPv4 octets), so look-alike numbers are not reported. Offsets are UTF-16 code units into the text
 * (JavaScript string indices), `end` exclusive.
 */

export type PiiType = 'EMAIL' | 'PHONE' | 'IBAN' | 'CREDIT_CARD' | 'US_SSN' | 'IP_ADDRESS' | 'URL';
export const PII_TYPES: readonly PiiType[] = ['EMAIL', 'PHONE', 'IBAN', 'CREDIT_CARD', 'US_SSN', 'IP_ADDRESS', 'URL'];

export interface PiiEntity {
  type: PiiType;
  text: string;
  start: number;
  end: number;
  score: number;
  method: string;
}

export const PII_METHOD = 'validated patterns (IBAN mod-97, Luhn, SSN area rules, IPv4 ranges)';

/** IBAN lengths by country (ISO 13616 registry). */
const IBAN_LENGTH: Record<string, number> = {
  AD: 24,
  AE: 23,
  AL: 28,
  AT: 20,
  AZ: 28,
  BA: 20,
  BE: 16,
  BG: 22,
  BH: 22,
  BR: 29,
  BY: 28,
  CH: 21,
  CR: 22,
  CY: 28,
  CZ: 24,
  DE: 22,
  DK: 18,
  DO: 28,
  EE: 20,
  EG: 29,
  ES: 24,
  FI: 18,
  FO: 18,
  FR: 27,
  GB: 22,
  GE: 22,
  GI: 23,
  GL: 18,
  GR: 27,
  GT: 28,
  HR: 21,
  HU: 28,
  IE: 22,
  IL: 23,
  IQ: 23,
  IS: 26,
  IT: 27,
  JO: 30,
  KW: 30,
  KZ: 20,
  LB: 28,
  LC: 32,
  LI: 21,
  LT: 20,
  LU: 20,
  LV: 21,
  MC: 27,
  MD: 24,
  ME: 22,
  MK: 19,
  MR: 27,
  MT: 31,
  MU: 30,
  NL: 18,
  NO: 15,
  PK: 24,
  PL: 28,
  PS: 29,
  PT: 25,
  QA: 29,
  RO: 24,
  RS: 22,
  SA: 24,
  SC: 31,
  SE: 24,
  SI: 19,
  SK: 24,
  SM: 27,
  ST: 25,
  SV: 28,
  TL: 23,
  TN: 24,
  TR: 26,
  UA: 29,
  VA: 22,
  VG: 24,
  XK: 20,
};

export function ibanValid(raw: string): boolean {
  const s = raw.replace(/[\s-]/g, '').toUpperCase();
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(s) || IBAN_LENGTH[s.slice(0, 2)] !== s.length) return false;
  const moved = s.slice(4) + s.slice(0, 4);
  let rem = 0;
  for (const ch of moved) {
    const v = ch >= 'A' ? ch.charCodeAt(0) - 55 : ch.charCodeAt(0) - 48;
    rem = v >= 10 ? (rem * 100 + v) % 97 : (rem * 10 + v) % 97;
  }
  return rem === 1;
}

export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) (d *= 2), d > 9 && (d -= 9);
    sum += d;
  }
  return sum % 10 === 0;
}

/** Issuer prefixes and lengths (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro). */
function cardIssuer(d: string): boolean {
  const n = d.length;
  if (/^4/.test(d)) return n === 13 || n === 16 || n === 19;
  if (/^(5[1-5]|2(2[2-9][1-9]|2[3-9]\d|[3-6]\d\d|7[01]\d|720))/.test(d)) return n === 16;
  if (/^3[47]/.test(d)) return n === 15;
  if (/^(6011|65|64[4-9])/.test(d)) return n >= 16 && n <= 19;
  if (/^35(2[89]|[3-8]\d)/.test(d)) return n >= 16 && n <= 19;
  if (/^3(0[0-5]|[689])/.test(d)) return n >= 14 && n <= 19;
  if (/^62/.test(d)) return n >= 16 && n <= 19;
  if (/^(50|5[6-9]|6)/.test(d)) return n >= 12 && n <= 19;
  return false;
}

function ssnValid(s: string): boolean {
  const [a, g, n] = s.split('-');
  return a !== '000' && a !== '666' && a![0] !== '9' && g !== '00' && n !== '0000';
}

interface Rule {
  type: PiiType;
  re: RegExp;
  check?: (m: string) => boolean;
  score: number;
}

const RULES: Rule[] = [
  { type: 'EMAIL', re: /[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*\.\p{L}{2,}/gu, score: 0.99 },
  { type: 'URL', re: /\bhttps?:\/\/[^\s<>"')\]]+[^\s<>"')\].,;:!?]/gu, score: 0.95 },
  { type: 'IBAN', re: /\b[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]){11,30}\b/g, check: ibanValid, score: 0.99 },
  {
    type: 'CREDIT_CARD',
    re: /\b\d(?:[ -]?\d){11,18}\b/g,
    check: (m) => {
      const d = m.replace(/\D/g, '');
      return cardIssuer(d) && luhnValid(d);
    },
    score: 0.97,
  },
  { type: 'US_SSN', re: /\b\d{3}-\d{2}-\d{4}\b/g, check: ssnValid, score: 0.9 },
  {
    type: 'IP_ADDRESS',
    re: /\b(?:\d{1,3}\.){3}\d{1,3}\b/g,
    check: (m) => m.split('.').every((o) => Number(o) <= 255 && !/^0\d/.test(o)),
    score: 0.9,
  },
  // international (+CC …) or grouped national numbers with at least 7 digits; dates and plain counts do not match
  {
    type: 'PHONE',
    re: /(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,8}){1,4}(?![\w-])/g,
    check: phoneLike,
    score: 0.8,
  },
];

function phoneLike(m: string): boolean {
  const digits = m.replace(/\D/g, '');
  if (digits.length < 7 || digits.length > 15) return false;
  if (/^\d{4}-\d{2}-\d{2}$/.test(m) || /^\d{1,2}[./-]\d{1,2}[./-]\d{2,4}$/.test(m)) return false; // dates
  return m.startsWith('+') || m.startsWith('(') || /[ .-]/.test(m);
}

/** Every PII span of the wanted types, in text order; where two overlap the earlier rule (stronger check) wins. */
export function findPii(text: string, types: readonly PiiType[] = PII_TYPES): PiiEntity[] {
  const want = new Set(types);
  const found: PiiEntity[] = [];
  const taken: [number, number][] = [];
  const overlaps = (s: number, e: number) => taken.some(([a, b]) => s < b && e > a);
  for (const rule of RULES) {
    for (const m of text.matchAll(rule.re)) {
      const start = m.index!;
      const end = start + m[0].length;
      if (rule.check && !rule.check(m[0])) continue;
      if (overlaps(start, end)) continue;
      taken.push([start, end]);
      if (want.has(rule.type)) found.push({ type: rule.type, text: m[0], start, end, score: rule.score, method: 'pattern' });
    }
  }
  return found.sort((a, b) => a.start - b.start);
}

export type RedactMode = 'type' | 'mask';

/** The text with each span replaced: `[EMAIL]` (mode type) or `*` per character (mode mask). */
export function redact(text: string, spans: readonly { start: number; end: number; type: string }[], mode: RedactMode = 'type'): string {
  let out = '';
  let at = 0;
  for (const s of [...spans].sort((a, b) => a.start - b.start)) {
    if (s.start < at) continue;
    out += text.slice(at, s.start) + (mode === 'mask' ? '*'.repeat(s.end - s.start) : `[${s.type}]`);
    at = s.end;
  }
  return out + text.slice(at);
}

/** Regex-only detection (no checksums): the baseline the benchmark compares against. */
export function findPiiRegexOnly(text: string): { type: PiiType; start: number; end: number }[] {
  const out: { type: PiiType; start: number; end: number }[] = [];
  for (const rule of RULES) {
    for (const m of text.matchAll(rule.re)) out.push({ type: rule.type, start: m.index!, end: m.index! + m[0].length });
  }
  return out;
}

/**
 * Named entities without a model: patterns (dates, money, percentages, e-mails, URLs, phone numbers),
 * a gazetteer (every ISO 3166 country name the runtime's locale data knows, plus large cities) and
 * cues inside capitalised name runs (titles such as "Dr." before a person, company suffixes such as
 * "Inc." or "GmbH", institution words such as "University"). Offsets are string indices, `end` exclusive.
 */
import { findPii } from './pii.ts';

export const ENTITIES_METHOD = 'patterns + gazetteer (ISO 3166 country names, major cities, title and company-suffix cues)';

export type EntityType = 'PERSON' | 'ORGANIZATION' | 'LOCATION' | 'DATE' | 'MONEY' | 'PERCENT' | 'EMAIL' | 'URL' | 'PHONE';
export interface Entity {
  type: EntityType;
  text: string;
  start: number;
  end: number;
  score: number;
}

const CITIES = [
  'Amsterdam',
  'Athens',
  'Bangkok',
  'Barcelona',
  'Beijing',
  'Berlin',
  'Bogotá',
  'Boston',
  'Brussels',
  'Budapest',
  'Buenos Aires',
  'Cairo',
  'Chicago',
  'Copenhagen',
  'Delhi',
  'Dubai',
  'Dublin',
  'Frankfurt',
  'Geneva',
  'Hamburg',
  'Helsinki',
  'Hong Kong',
  'Istanbul',
  'Jakarta',
  'Johannesburg',
  'Kyiv',
  'Lagos',
  'Lisbon',
  'London',
  'Los Angeles',
  'Madrid',
  'Manila',
  'Melbourne',
  'Mexico City',
  'Milan',
  'Montreal',
  'Moscow',
  'Mumbai',
  'Munich',
  'Nairobi',
  'New York',
  'Oslo',
  'Paris',
  'Prague',
  'Rome',
  'San Francisco',
  'São Paulo',
  'Seattle',
  'Seoul',
  'Shanghai',
  'Singapore',
  'Stockholm',
  'Sydney',
  'Tokyo',
  'Toronto',
  'Vancouver',
  'Vienna',
  'Warsaw',
  'Washington',
  'Zurich',
];

let gazetteer: Map<string, EntityType> | undefined;
function places(): Map<string, EntityType> {
  if (gazetteer) return gazetteer;
  gazetteer = new Map();
  const regions = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });
  for (let a = 65; a <= 90; a++) {
    for (let b = 65; b <= 90; b++) {
      const code = String.fromCharCode(a, b);
      const name = regions.of(code);
      if (name && name !== code && !/Unknown|Pseudo|Outlying|European Union|Eurozone|United Nations/.test(name)) {
        gazetteer.set(name, 'LOCATION');
      }
    }
  }
  for (const c of CITIES) gazetteer.set(c, 'LOCATION');
  return gazetteer;
}

const MONTH =
  '(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\\.?';
const PATTERNS: { type: EntityType; re: RegExp; score: number }[] = [
  {
    type: 'DATE',
    re: new RegExp(
      `\\b(?:\\d{4}-\\d{2}-\\d{2}|\\d{1,2} ${MONTH},? \\d{4}|${MONTH} \\d{1,2}(?:st|nd|rd|th)?,? \\d{4}|${MONTH} \\d{4}|\\d{1,2}/\\d{1,2}/\\d{4}|\\d{1,2}\\.\\d{1,2}\\.\\d{4})\\b`,
      'g',
    ),
    score: 0.95,
  },
  {
    type: 'MONEY',
    re: /(?:[$€£¥]\s?\d[\d,.]*(?:\s?(?:million|billion|bn|m|k))?|\b\d[\d,.]*\s?(?:USD|EUR|GBP|JPY|CHF|dollars|euros|pounds)\b)/g,
    score: 0.95,
  },
  { type: 'PERCENT', re: /\b\d+(?:[.,]\d+)?\s?(?:%|percent\b)/g, score: 0.95 },
];

const NAME = "\\p{Lu}[\\p{L}'’-]+";
const RUN = new RegExp(
  `(?:(?:Mr|Mrs|Ms|Dr|Prof|Sir|Dame)\\.?\\s+)?${NAME}(?:\\s+(?:(?:of|de|van|von|der|la|du|and|&)\\s+)?${NAME})*(?:,?\\s+(?:Inc|Ltd|LLC|GmbH|AG|SA|plc|Corp|Co)\\.?)?`,
  'gu',
);
const TITLE = /^(?:Mr|Mrs|Ms|Dr|Prof|Sir|Dame)\.?\s+/;
const ORG_SUFFIX =
  /(?:,?\s+(?:Inc|Ltd|LLC|GmbH|AG|SA|plc|Corp|Co)\.?|\s(?:Corporation|Company|University|Bank|Institute|Foundation|Agency|Ministry|Association|Group|Council|Committee))$/;
const ORG_PREFIX = /^(?:University|Bank|Institute|Ministry|Department) of\s/;

export function patternEntities(text: string): Entity[] {
  const out: Entity[] = [];
  const taken: [number, number][] = [];
  const free = (s: number, e: number) => !taken.some(([a, b]) => s < b && e > a);
  const add = (type: EntityType, start: number, end: number, score: number) => {
    if (end <= start || !free(start, end)) return;
    taken.push([start, end]);
    out.push({ type, text: text.slice(start, end), start, end, score });
  };
  for (const p of findPii(text, ['EMAIL', 'URL', 'PHONE'])) add(p.type as EntityType, p.start, p.end, p.score);
  for (const p of PATTERNS) for (const m of text.matchAll(p.re)) add(p.type, m.index!, m.index! + m[0].length, p.score);
  const gaz = places();
  const classify = (start: number, run: string, sentenceStart: boolean): void => {
    if (/\b(?:Inc|Ltd|Corp|Co)$/.test(run) && text[start + run.length] === '.') run += '.';
    const title = run.match(TITLE);
    if (title) {
      // "Dr. Angela Weber of Siemens AG": the person ends at the first connector, the rest is classified on its own
      const rest = run.slice(title[0].length);
      const cut = rest.search(/\s(?:of|and|&)\s/);
      const person = cut < 0 ? rest : rest.slice(0, cut);
      add('PERSON', start + title[0].length, start + title[0].length + person.length, 0.9);
      if (cut >= 0) {
        const next = rest.slice(cut).match(/^\s(?:of|and|&)\s/)![0];
        classify(start + title[0].length + cut + next.length, rest.slice(cut + next.length), false);
      }
      return;
    }
    if (ORG_SUFFIX.test(run) || ORG_PREFIX.test(run)) return add('ORGANIZATION', start, start + run.length, 0.85);
    if (gaz.has(run)) return add(gaz.get(run)!, start, start + run.length, 0.9);
    // a run that starts a sentence may carry an ordinary capitalised word first ("In Paris"): look at the rest
    if (sentenceStart) {
      const sp = run.indexOf(' ');
      if (sp > 0) return classify(start + sp + 1, run.slice(sp + 1), false);
      return;
    }
    for (const [name, type] of gaz) {
      const i = run.indexOf(name);
      if (i >= 0 && (i === 0 || run[i - 1] === ' ') && (i + name.length === run.length || run[i + name.length] === ' ')) {
        add(type, start + i, start + i + name.length, 0.8);
      }
    }
    // two to four capitalised words, not at a sentence start and not a place: most often a person's name
    const words = run.split(/\s+/);
    if (words.length >= 2 && words.length <= 4 && words.every((w) => /^\p{Lu}\p{Ll}+$/u.test(w))) {
      add('PERSON', start, start + run.length, 0.6);
    }
  };
  for (const m of text.matchAll(RUN)) {
    const start = m.index!;
    const sentenceStart = start === 0 || /[.!?:]\s*$|\n\s*$/.test(text.slice(Math.max(0, start - 3), start));
    classify(start, m[0], sentenceStart);
  }
  return out.sort((a, b) => a.start - b.start);
}

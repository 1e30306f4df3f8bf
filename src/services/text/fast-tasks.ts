/**
 * The text tasks that need no model (language, PII, keywords, entities) as pure functions of the text and
 * plain options, so that large inputs can run in the worker pool (operations `text.*`): their pattern
 * scans walk every character in JavaScript and held the event loop for seconds on a large document.
 */
import { ENTITIES_METHOD, patternEntities } from './entities.ts';
import { keyphrases, KEYWORDS_METHOD } from './keywords.ts';
import { detectLanguage, LANGUAGE_METHOD } from './language.ts';
import { findPii, PII_METHOD, type PiiType, redact, type RedactMode } from './pii.ts';

/** Inputs from this many characters up run in the worker pool; below it the hop costs more than the work. */
export const TEXT_OFF_LOOP_CHARS = 16_384;

export interface PiiOptions {
  types?: PiiType[];
  redact?: boolean;
  redactMode?: RedactMode;
}

export const languageOf = (text: string) => detectLanguage(text).then((d) => ({ ...d, method: LANGUAGE_METHOD }));

export function piiOf(text: string, o: PiiOptions) {
  const entities = findPii(text, o.types);
  return { method: PII_METHOD, entities, ...(o.redact ? { redacted_text: redact(text, entities, o.redactMode) } : {}) };
}

export const keywordsOf = (text: string, o: { limit: number; maxWords: number }) => ({
  method: KEYWORDS_METHOD,
  keywords: keyphrases(text, o),
});

export function entitiesOf(text: string, o: { types?: string[] }) {
  const all = patternEntities(text);
  return { method: ENTITIES_METHOD, entities: o.types ? all.filter((e) => o.types!.includes(e.type)) : all };
}

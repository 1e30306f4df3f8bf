/**
 * Language detection without a model: ELD (n-gram scores over 60 languages, ISO 639-1 codes), loaded on
 * first use. Language codes given by callers are checked here too (a code no locale data names is a 400).
 */
import { invalidArgument } from '../errors.ts';

type Eld = typeof import('eld/medium')['eld'];
let eld: Promise<Eld> | undefined;
const loadEld = () => (eld ??= import('eld/medium').then((m) => m.eld));

export interface DetectedLanguage {
  language: string;
  name: string;
  /** ELD's score of the best language, 0..1. */
  confidence: number;
  /** ELD's own judgement: enough n-grams and a clear enough lead over the next language. */
  reliable: boolean;
  alternatives: { language: string; confidence: number }[];
}

export const LANGUAGE_METHOD = 'eld (n-gram language detector, medium database)';

const names = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'code' });

/** English name of a language code, or null when the code names no language. */
export function languageName(code: string): string | null {
  try {
    const canonical = Intl.getCanonicalLocales(code)[0];
    if (!canonical) return null;
    const name = names.of(canonical);
    return !name || name.toLowerCase() === canonical.toLowerCase() ? null : name;
  } catch {
    return null;
  }
}

/** A caller's language code, canonical (`EN-us` → `en-US`); 400 when it names no language. */
export function requireLanguage(code: string, field: string): { code: string; name: string } {
  const name = languageName(code.trim());
  if (!name) {
    throw invalidArgument(`${field}: "${code}" is not a known language code (use ISO 639-1 or BCP 47, e.g. "de", "pt-BR")`, [{
      field,
      message: 'unknown language',
    }]);
  }
  return { code: Intl.getCanonicalLocales(code.trim())[0]!, name };
}

export async function detectLanguage(text: string, top = 3): Promise<DetectedLanguage> {
  const d = await loadEld();
  const r = d.detect(text);
  const scores = Object.entries(r.getScores()).sort((a, b) => b[1] - a[1]);
  const language = r.language || 'und';
  return {
    language,
    name: language === 'und' ? 'Undetermined' : languageName(language) ?? language,
    confidence: round(scores[0]?.[1] ?? 0),
    reliable: r.language !== '' && r.isReliable(),
    alternatives: scores.slice(1, top + 1).map(([language, s]) => ({ language, confidence: round(s) })),
  };
}

const round = (x: number) => Math.round(x * 1e4) / 1e4;

/** Sentences with their offsets, by the runtime's own segmenter (Unicode sentence boundaries, UAX #29). */
export interface Sentence {
  text: string;
  start: number;
  end: number;
}

const segmenters = new Map<string, Intl.Segmenter>();

export function sentences(text: string, locale = 'en'): Sentence[] {
  let seg = segmenters.get(locale);
  if (!seg) segmenters.set(locale, seg = new Intl.Segmenter(locale, { granularity: 'sentence' }));
  const out: Sentence[] = [];
  for (const s of seg.segment(text)) {
    const lead = s.segment.length - s.segment.trimStart().length;
    const t = s.segment.trim();
    if (t) out.push({ text: t, start: s.index + lead, end: s.index + lead + t.length });
  }
  return out;
}

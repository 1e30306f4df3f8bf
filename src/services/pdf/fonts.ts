/**
 * The fonts the watermark draws with, tried in order per character: DejaVu Sans (Latin, Greek,
 * Cyrillic and more), Noto Sans Arabic, Noto Sans SC (CJK). Files come from npm packages and are read
 * on first use only (Noto Sans SC is 10 MB).
 */
import fontkit from '@cantoo/fontkit';
import { readFile } from 'node:fs/promises';
import { packageFile } from '../../runtime/assets.ts';
import { ServiceError } from '../errors.ts';

export interface ShippedFont {
  family: string;
  scripts: string[];
  spec: string;
}

export const SHIPPED_FONTS: ShippedFont[] = [
  { family: 'DejaVu Sans', scripts: ['Latin', 'Greek', 'Cyrillic'], spec: 'dejavu-fonts-ttf/ttf/DejaVuSans.ttf' },
  { family: 'Noto Sans Arabic', scripts: ['Arabic'], spec: '@expo-google-fonts/noto-sans-arabic/400Regular/NotoSansArabic_400Regular.ttf' },
  {
    family: 'Noto Sans SC',
    scripts: ['Han', 'Hiragana', 'Katakana', 'Hangul (partial)'],
    spec: '@expo-google-fonts/noto-sans-sc/400Regular/NotoSansSC_400Regular.ttf',
  },
];

export interface LoadedFont {
  family: string;
  bytes: Uint8Array;
  has(cp: number): boolean;
}

const cache = new Map<string, Promise<LoadedFont | null>>();

function load(f: ShippedFont): Promise<LoadedFont | null> {
  let p = cache.get(f.spec);
  if (!p) {
    p = (async () => {
      try {
        const bytes = new Uint8Array(await readFile(packageFile(f.spec)));
        const font = fontkit.create(bytes) as unknown as { hasGlyphForCodePoint(cp: number): boolean };
        return { family: f.family, bytes, has: (cp: number) => font.hasGlyphForCodePoint(cp) };
      } catch {
        return null; // package not installed: the font is simply not offered
      }
    })();
    cache.set(f.spec, p);
  }
  return p;
}

/** Families whose files are present. */
export async function installedFonts(): Promise<ShippedFont[]> {
  const out: ShippedFont[] = [];
  for (const f of SHIPPED_FONTS) if (await load(f)) out.push(f);
  return out;
}

export interface TextRun {
  font: LoadedFont;
  text: string;
}

/**
 * Split text into runs, each drawn by the first font that has every character of the run.
 * Returns the characters no font has (the caller refuses with unsupported_characters).
 */
export async function fontRuns(text: string): Promise<{ runs: TextRun[]; missing: string[] }> {
  // Arabic letters go to Noto Sans Arabic first: DejaVu has Arabic glyphs but weaker joining forms
  const arabic = (cp: number) => (cp >= 0x600 && cp <= 0x8ff) || (cp >= 0xfb50 && cp <= 0xfdff) || (cp >= 0xfe70 && cp <= 0xfeff);
  const pick = async (cp: number): Promise<LoadedFont | undefined> => {
    const order = arabic(cp) ? [1, 0, 2] : [0, 1, 2];
    for (const i of order) {
      const f = await load(SHIPPED_FONTS[i]!); // loads lazily: plain Latin text never reads the CJK file
      if (f?.has(cp)) return f;
    }
    return undefined;
  };
  const runs: TextRun[] = [];
  const missing = new Set<string>();
  // combining marks and joiners follow the font of the character before them
  const neutral = (ch: string) => /[\s\u200c\u200d\p{M}]/u.test(ch);
  for (const ch of text) {
    const last = runs[runs.length - 1];
    if (last && neutral(ch) && last.font.has(ch.codePointAt(0)!)) {
      last.text += ch;
      continue;
    }
    const f = await pick(ch.codePointAt(0)!);
    if (!f) {
      missing.add(ch);
      continue;
    }
    if (last && last.font === f) last.text += ch;
    else runs.push({ font: f, text: ch });
  }
  return { runs, missing: [...missing] };
}

/** The runs of `text`, or 422 unsupported_characters naming each character no shipped font draws. */
export async function drawableRuns(text: string): Promise<TextRun[]> {
  const r = await fontRuns(text);
  if (r.missing.length) {
    const named = r.missing.map((c) => `${c} (U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')})`);
    throw new ServiceError(422, 'unsupported_characters', `No installed font draws: ${named.join(', ')}.`, {
      details: { characters: r.missing },
    });
  }
  return r.runs;
}

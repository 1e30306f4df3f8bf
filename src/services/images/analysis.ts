/**
 * imageAnalysis: what an image is and how good it looks, for triage before OCR or ML.
 *  - dimensions, format, pages, alpha, metadata present, an EXIF summary;
 *  - colour statistics per channel (mean, standard deviation, min, max; 0..255, as ImageMagick's
 *    identify -verbose reports them) and mean saturation;
 *  - sharpness: variance of the Laplacian of the luma (on an image at most 1024 pixels across, so the
 *    figure does not depend on resolution); under 100 reads as blurry;
 *  - exposure: mean luma and the shares of clipped shadows (< 8) and highlights (> 247);
 *  - text presence (optional, on by default): OCR on the page, words and mean confidence.
 */
import { ocrGray, pickEngine } from '../ocr/ocr.ts';
import { loadPage, type PageOptions } from './load.ts';
import { exifSummary } from './metadata.ts';
import { fitSize, grayOf, resize } from './pixels.ts';

export interface AnalysisOptions extends PageOptions {
  detectText?: boolean;
  language?: string;
  signal?: AbortSignal;
}

const r2 = (x: number) => Math.round(x * 100) / 100;

export async function imageAnalysis(bytes: Uint8Array, o: AnalysisOptions) {
  const page = await loadPage(bytes, o);
  const { img } = page;
  const n = img.width * img.height, d = img.data;
  const sum = [0, 0, 0, 0], sq = [0, 0, 0, 0], min = [255, 255, 255, 255], max = [0, 0, 0, 0];
  let sat = 0, translucent = 0;
  for (let i = 0; i < n * 4; i += 4) {
    for (let k = 0; k < 4; k++) {
      const v = d[i + k]!;
      sum[k]! += v;
      sq[k]! += v * v;
      if (v < min[k]!) min[k] = v;
      if (v > max[k]!) max[k] = v;
    }
    const hi = Math.max(d[i]!, d[i + 1]!, d[i + 2]!), lo = Math.min(d[i]!, d[i + 1]!, d[i + 2]!);
    sat += hi ? (hi - lo) / hi : 0;
    if (d[i + 3]! < 255) translucent++;
  }
  const channel = (k: number) => ({
    mean: r2(sum[k]! / n),
    std: r2(Math.sqrt(Math.max(0, sq[k]! / n - (sum[k]! / n) ** 2))),
    min: min[k]!,
    max: max[k]!,
  });
  const luma = grayOf(img);
  let lsum = 0, dark = 0, bright = 0;
  for (let i = 0; i < n; i++) {
    const v = luma[i]!;
    lsum += v;
    if (v < 8) dark++;
    else if (v > 247) bright++;
  }
  const meanLuma = lsum / n;
  const exposure = {
    mean_luma: r2(meanLuma),
    clipped_shadows: r2((dark / n) * 100) / 100,
    clipped_highlights: r2((bright / n) * 100) / 100,
    verdict: meanLuma < 60 || dark / n > 0.25 ? 'underexposed' : meanLuma > 200 || bright / n > 0.25 ? 'overexposed' : 'ok',
  };
  const small = fitSize(img.width, img.height, { width: 1024, height: 1024 }, 'inside', false);
  const g = grayOf(await resize(img, small.width, small.height, o.engine));
  const lap = laplacianVariance(g, small.width, small.height);
  let text: { present: boolean; words: number; confidence: number; sample: string } | undefined;
  if (o.detectText ?? true) {
    const res = await ocrGray({ data: luma, width: img.width, height: img.height }, 1, pickEngine('auto', o.language), {
      signal: o.signal,
    });
    const words = res.lines.flatMap((l) => l.words).filter((w) => w.confidence >= 0.6 && /[\p{L}\p{N}]{2,}/u.test(w.text));
    text = {
      present: words.length > 0,
      words: words.length,
      confidence: res.confidence,
      sample: words.map((w) => w.text).join(' ').slice(0, 200),
    };
  }
  return {
    width: img.width,
    height: img.height,
    format: page.format,
    pages: page.pageCount,
    page_index: page.pageIndex,
    has_alpha: translucent > 0,
    metadata: { exif: !!page.metadata.exif, xmp: !!page.metadata.xmp, icc: !!page.metadata.icc, orientation: page.metadata.orientation },
    exif: page.metadata.exif ? exifSummary(page.metadata.exif) : {},
    color: { red: channel(0), green: channel(1), blue: channel(2), alpha: channel(3), saturation: r2(sat / n) },
    sharpness: { laplacian_variance: r2(lap), blurry: lap < 100 },
    exposure,
    ...(text ? { text } : {}),
  };
}

function laplacianVariance(g: Uint8Array, w: number, h: number): number {
  let s = 0, s2 = 0, m = 0;
  for (let y = 1; y < h - 1; y++) {
    for (let x = 1; x < w - 1; x++) {
      const i = y * w + x;
      const v = g[i - 1]! + g[i + 1]! + g[i - w]! + g[i + w]! - 4 * g[i]!;
      s += v;
      s2 += v * v;
      m++;
    }
  }
  return m ? s2 / m - (s / m) ** 2 : 0;
}

/**
 * tesseract.js with the `eng` data shipped in @tesseract.js-data/eng, read from disk (no network, no
 * cache file written). A small pool of workers is created on first use, reused by every request, and
 * terminated after two idle minutes.
 */
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import type Tesseract from 'tesseract.js';
import { capabilityUnavailable } from '../errors.ts';
import { IdleResource } from './idle-pool.ts';
import { type Gray, toPgm } from './raster.ts';
import type { EngineResult, OcrEngine, OcrLine } from './types.ts';

const require = createRequire(import.meta.url);

/** The directory holding eng.traineddata.gz (the LSTM "best_int" model tesseract.js uses by default). */
export function tesseractLangPath(): string {
  return join(dirname(require.resolve('@tesseract.js-data/eng/package.json')), '4.0.0_best_int');
}

class WorkerPool {
  private free: Tesseract.Worker[] = [];
  private waiters: ((w: Tesseract.Worker) => void)[] = [];
  constructor(readonly workers: Tesseract.Worker[]) {
    this.free = [...workers];
  }
  async with<R>(fn: (w: Tesseract.Worker) => Promise<R>): Promise<R> {
    const w = this.free.pop() ?? (await new Promise<Tesseract.Worker>((r) => this.waiters.push(r)));
    try {
      return await fn(w);
    } finally {
      const next = this.waiters.shift();
      if (next) next(w);
      else this.free.push(w);
    }
  }
}

export const tesseractWorkers = (): number => Math.max(1, Math.min(2, availableParallelism()));

const pool = new IdleResource<WorkerPool>(
  async () => {
    const { createWorker } = (await import('tesseract.js')) as unknown as typeof Tesseract;
    const make = async () => {
      const w = await createWorker('eng', 1, /* LSTM_ONLY */ { langPath: tesseractLangPath(), cacheMethod: 'none', gzip: true });
      await w.setParameters({ tessedit_pageseg_mode: '3' as Tesseract.PSM, user_defined_dpi: '300' });
      return w;
    };
    try {
      return new WorkerPool(await Promise.all(Array.from({ length: tesseractWorkers() }, make)));
    } catch (e) {
      // Its worker script and language data live in node_modules: absent from the single binary.
      throw capabilityUnavailable(`the tesseract OCR engine cannot start here (${(e as Error).message})`);
    }
  },
  async (p) => {
    await Promise.all(p.workers.map((w) => w.terminate()));
  },
);

export const releaseTesseract = () => pool.release();

export const tesseractEngine: OcrEngine = {
  name: 'tesseract',
  async recognize(image: Gray, signal?: AbortSignal): Promise<EngineResult> {
    return pool.use((p) =>
      p.with(async (w) => {
        signal?.throwIfAborted();
        const r = await w.recognize(Buffer.from(toPgm(image)), {}, { blocks: true, text: false });
        const lines: OcrLine[] = [];
        for (const b of r.data.blocks ?? []) {
          for (const para of b.paragraphs) {
            for (const l of para.lines) {
              const words = l.words.filter((wd) => wd.text.trim()).map((wd) => ({
                text: wd.text,
                box: box(wd.bbox),
                confidence: round(wd.confidence / 100),
              }));
              if (!words.length) continue;
              lines.push({ text: words.map((wd) => wd.text).join(' '), box: box(l.bbox), confidence: round(l.confidence / 100), words });
            }
          }
        }
        return { lines };
      })
    );
  },
};

const box = (b: Tesseract.Bbox) => ({ x: b.x0, y: b.y0, width: b.x1 - b.x0, height: b.y1 - b.y0 });
const round = (n: number) => Math.round(n * 1000) / 1000;

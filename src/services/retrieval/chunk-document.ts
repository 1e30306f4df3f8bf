/**
 * A document's bytes → retrieval chunks, through the document pipeline (PDF text layer with OCR of
 * scanned pages, DOCX, HTML, Markdown, text, images through OCR) and the token splitter. A pure function
 * over bytes and plain options, so it can run in a worker.
 */
import { analyseBytes } from '../documents/lazy.ts';
import type { DocFormat } from '../documents/detect.ts';
import { splitElements } from '../documents/split.ts';
import type { ChunkIn } from '../../store/retrieval.ts';

export interface ChunkingOptions {
  maxTokens: number;
  overlap: number;
}

/** Chunks of up to 800 tokens (OpenAI's default size); the splitter wants an overlap below half the size, so 300 rather than OpenAI's 400. */
export const DEFAULT_CHUNKING: ChunkingOptions = { maxTokens: 800, overlap: 300 };

export async function chunkDocument(
  bytes: Uint8Array,
  format: DocFormat,
  meta: Record<string, unknown>,
  o: ChunkingOptions = DEFAULT_CHUNKING,
  signal?: AbortSignal,
): Promise<ChunkIn[]> {
  const doc = await analyseBytes(bytes, format, { ocrScans: true, signal });
  const chunks = splitElements(doc.elements, { strategy: 'tokens', maxTokens: o.maxTokens, overlap: o.overlap });
  return chunks.filter((c) => c.text.trim()).map((c) => ({
    position: c.index,
    text: c.text,
    meta: { ...meta, pages: c.pages, heading_path: c.heading_path },
  }));
}

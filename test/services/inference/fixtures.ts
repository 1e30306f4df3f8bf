/** Paths of the generated tiny models (scripts/models/gen-tiny-models.py). */
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../fixtures/models/', import.meta.url));
export const TINY_LLAMA = `${root}tiny-llama`;
export const TINY_EMBED = `${root}tiny-bert-embed`;
export const TINY_RERANKER = `${root}tiny-bert-reranker`;

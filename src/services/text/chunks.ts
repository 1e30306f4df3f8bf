/** Long texts cut into chunks on element boundaries (headings, paragraphs, lists), by the document splitter. */
import { markdownToElements } from '../documents/md-elements.ts';
import { countTokens, splitElements } from '../documents/split.ts';

export { countTokens };

export function textChunks(text: string, maxTokens: number): string[] {
  if (countTokens(text) <= maxTokens) return [text];
  return splitElements(markdownToElements(text), { strategy: 'tokens', maxTokens, overlap: 0 }).map((c) => c.text);
}

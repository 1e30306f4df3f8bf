/**
 * Reranking with a cross-encoder from the catalog (default ms-marco-minilm:l6): each (query, document)
 * pair scored by the model's relevance head; the sigmoid of the logit is the relevance score in 0..1.
 */
import type { ChatService } from '../chat/chat-service.ts';
import type { InferenceEngine } from '../inference/engine.ts';

export const DEFAULT_RERANK_MODEL = 'ms-marco-minilm:l6';

export class Reranker {
  constructor(private chat: ChatService, private engine: InferenceEngine) {}

  async rerank(
    model: string | undefined,
    query: string,
    documents: string[],
    signal?: AbortSignal,
  ): Promise<{ model: string; scores: number[]; logits: number[] }> {
    const m = await this.chat.resolve(model || DEFAULT_RERANK_MODEL, 'reranker');
    if (!documents.length) return { model: m.name, scores: [], logits: [] };
    const r = await this.engine.rerank(m.engineSpec, query, documents, { signal });
    return { model: m.name, scores: r.map((x) => x.score), logits: r.map((x) => x.logit) };
  }
}

/** Query rewriting with a chat model: the question as a short keyword-rich search query. */
export async function rewriteQuery(chat: ChatService, model: string, query: string, signal?: AbortSignal): Promise<string> {
  const stream = await chat.chat({
    model,
    signal,
    raw: true,
    think: false,
    params: { temperature: 0, maxTokens: 64 },
    messages: [
      {
        role: 'system',
        content:
          "Rewrite the user's question as a short search query for a document search engine: keep names, numbers and key terms, add close synonyms, drop filler words. Answer with the query only, on one line.",
      },
      { role: 'user', content: query },
    ],
  });
  const r = await stream.complete();
  return r.message.content.split('\n').map((l) => l.trim()).find(Boolean) ?? '';
}

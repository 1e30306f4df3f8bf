/**
 * Chat with documents: the last user message is searched in the collections the key may read, the best
 * chunks go to the model as numbered sources, and the answer's [n] markers become citations naming the
 * document, page and chunk (docs/api/search.md).
 */
import type { ChatMessageIn, ChatService, ChatStream } from '../chat/chat-service.ts';
import type { Owner } from '../keys/api-keys.ts';
import { invalidArgument } from '../errors.ts';
import type { SearchMode } from '../retrieval/engine.ts';
import type { Filter } from './filter.ts';
import type { CollectionOut } from './resources.ts';
import type { QueryHit, SearchService } from './search-service.ts';

export interface DocChatIn {
  model: string;
  messages: ChatMessageIn[];
  collections?: { tenant: string; collection: string }[];
  mode: SearchMode;
  semantic_ratio: number;
  /** Sources given to the model. */
  sources: number;
  filter?: Filter;
  rerank?: { model?: string; candidates: number };
  maxTokens?: number;
  temperature?: number;
  signal?: AbortSignal;
}

export interface Source {
  index: number;
  document_id: string;
  tenant: string;
  collection: string;
  page: number | null;
  pages: number[];
  chunk: number;
  score: number;
  text: string;
}
export interface Citation extends Omit<Source, 'text'> {
  quote: string;
}

const SOURCE_CHARS = 2000;

export function sourcesPrompt(sources: Source[]): string {
  const head =
    'Answer the question using only the numbered sources below. Cite every source you use with its number in square brackets, like [1]. If the sources do not hold the answer, say so.';
  if (!sources.length) return `${head}\n\n(no sources matched the question)`;
  const body = sources.map((s) =>
    `[${s.index}] document "${s.document_id}"${s.page !== null ? `, page ${s.page}` : ''}, chunk ${s.chunk}:\n${
      s.text.slice(0, SOURCE_CHARS)
    }`
  ).join('\n\n');
  return `${head}\n\n${body}`;
}

/** The sources the answer cites by [n], in the order first cited. */
export function citationsOf(answer: string, sources: Source[]): Citation[] {
  const out: Citation[] = [];
  const seen = new Set<number>();
  for (const m of answer.matchAll(/\[(\d{1,3})(?:\s*,\s*(\d{1,3}))*\]/g)) {
    for (const n of m[0].match(/\d+/g)!.map(Number)) {
      const s = sources.find((x) => x.index === n);
      if (!s || seen.has(n)) continue;
      seen.add(n);
      const { text, ...rest } = s;
      out.push({ ...rest, quote: text.slice(0, 300) });
    }
  }
  return out;
}

export class DocChat {
  constructor(private search: SearchService, private chat: ChatService) {}

  async #collections(owner: Owner, wanted: DocChatIn['collections']): Promise<CollectionOut[]> {
    if (!wanted?.length) return this.search.resources.readable(owner);
    const out: CollectionOut[] = [];
    for (const w of wanted) out.push(await this.search.resources.collectionFor(owner, w.tenant, w.collection, 'read'));
    return out;
  }

  /** Retrieves the sources and starts the generation (throws before streaming for bad requests). */
  async start(owner: Owner, req: DocChatIn): Promise<{ sources: Source[]; stream: ChatStream; query: string }> {
    const last = [...req.messages].reverse().find((m) => m.role === 'user');
    const query = (last?.content ?? '').trim();
    if (!query) {
      throw invalidArgument('messages: the last user message holds the question to search for', [{
        field: 'messages',
        message: 'no user question',
      }]);
    }
    const cols = await this.#collections(owner, req.collections);
    const found = await this.search.queryCollections(cols, {
      q: query,
      mode: req.mode,
      semantic_ratio: req.semantic_ratio,
      filter: req.filter,
      limit: req.sources,
      offset: 0,
      highlight: false,
      rerank: req.rerank,
      signal: req.signal,
    });
    const sources = found.data.map((h: QueryHit, i: number): Source => ({
      index: i + 1,
      document_id: h.document_id,
      tenant: h.tenant ?? '',
      collection: h.collection ?? '',
      page: h.page,
      pages: h.pages,
      chunk: h.chunk,
      score: h.score,
      text: h.text,
    }));
    // one system message (most chat templates take only one, first): the sources, then the caller's own
    const own = req.messages.filter((m) => m.role === 'system').map((m) => m.content ?? '').filter(Boolean);
    const messages: ChatMessageIn[] = [
      { role: 'system', content: [sourcesPrompt(sources), ...own].join('\n\n') },
      ...req.messages.filter((m) => m.role !== 'system'),
    ];
    const stream = await this.chat.chat({
      model: req.model,
      messages,
      signal: req.signal,
      params: { maxTokens: req.maxTokens, temperature: req.temperature },
    });
    return { sources, stream, query };
  }

  /** The whole answer at once (the task form). */
  async answer(owner: Owner, req: DocChatIn) {
    const { sources, stream, query } = await this.start(owner, req);
    const r = await stream.complete();
    return {
      object: 'search.chat',
      model: r.model,
      query,
      message: { role: 'assistant', content: r.message.content },
      citations: citationsOf(r.message.content, sources),
      sources,
      finish_reason: r.finishReason,
      usage: { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens },
    };
  }
}

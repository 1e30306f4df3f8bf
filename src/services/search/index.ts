/** The search capability as the app sees it: resources and access, documents and queries, rerank, chat with documents. */
import type { ChatService } from '../chat/chat-service.ts';
import type { InferenceEngine } from '../inference/engine.ts';
import type { Db } from '../../store/schema.ts';
import type { Embedder } from '../retrieval/engine.ts';
import { DocChat } from './doc-chat.ts';
import { Reranker, rewriteQuery } from './rerank.ts';
import { SearchResources } from './resources.ts';
import { SearchService } from './search-service.ts';

export interface Search {
  resources: SearchResources;
  service: SearchService;
  reranker: Reranker;
  docChat: DocChat;
  close(): Promise<void>;
}

export function createSearch(
  o: { db: Db; chat: ChatService; engine: InferenceEngine; embedder: Embedder; defaultEmbeddingModel: () => Promise<string> | string },
): Search {
  const resources = new SearchResources(o.db, o.embedder);
  const reranker = new Reranker(o.chat, o.engine);
  const service = new SearchService(resources, {
    defaultEmbeddingModel: o.defaultEmbeddingModel,
    rerank: (model, query, docs, signal) => reranker.rerank(model, query, docs, signal),
    rewrite: (model, query, signal) => rewriteQuery(o.chat, model, query, signal),
  });
  return { resources, service, reranker, docChat: new DocChat(service, o.chat), close: () => resources.close() };
}

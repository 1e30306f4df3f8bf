/**
 * What a search cluster's database offers the search service: documents as chunks of an index (one
 * collection), keyword, semantic and hybrid candidates fused by reciprocal rank fusion, and its status.
 * libSQL clusters use the shared retrieval engine (libsql-backend.ts); PostgreSQL ones store/search/pg.ts.
 */
import type { ChunkIn, ChunkRow } from '../../store/retrieval.ts';
import type { SearchMode } from '../retrieval/engine.ts';
import type { Filter } from './filter.ts';

export interface BackendSearch {
  mode: SearchMode;
  /** Candidates to return (after fusion). */
  limit: number;
  /** Embedding model of the query; absent = no semantic side. */
  model?: string;
  /** Weight of the semantic list in hybrid fusion, 0..1. */
  semanticWeight: number;
  filter?: Filter;
  /** libSQL: force an exact scan of the vectors (benchmarks; the index is chosen by size otherwise). */
  exactVectors?: boolean;
  signal?: AbortSignal;
}

export interface BackendHit {
  chunk: ChunkRow;
  score: number;
  keywordRank?: number;
  semanticRank?: number;
}

export interface ClusterStatus {
  reachable: boolean;
  full_text: string;
  vectors: string;
  error?: string;
}

export interface IndexCounts {
  documents: number;
  chunks: number;
}

export interface SearchBackend {
  readonly kind: 'libsql' | 'postgres';
  status(): Promise<ClusterStatus>;
  /** Stores a document's chunks, replacing an earlier version of it; returns the chunk count. */
  putDocument(indexId: string, docId: string, chunks: ChunkIn[]): Promise<number>;
  /** Embeds the chunks of the document that have no vector yet. */
  embedDocument(indexId: string, docId: string, model: string, signal?: AbortSignal): Promise<number>;
  deleteDocument(indexId: string, docId: string): Promise<boolean>;
  /** Deletes every document with at least one chunk matching the filter; returns their ids. */
  deleteByFilter(indexId: string, filter: Filter): Promise<string[]>;
  deleteIndex(indexId: string): Promise<void>;
  documentChunks(indexId: string, docId: string): Promise<ChunkRow[]>;
  listDocuments(indexId: string, limit: number, offset: number): Promise<{ id: string; chunks: number }[]>;
  /** Documents and chunks per index, for the indexes that hold any. */
  counts(indexIds: string[]): Promise<Map<string, IndexCounts>>;
  search(indexIds: string[], query: string, o: BackendSearch): Promise<BackendHit[]>;
  close(): Promise<void>;
}

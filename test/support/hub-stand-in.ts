/**
 * A local stand-in for the model hub: a real HTTP server on 127.0.0.1 that serves folders of model files
 * the way huggingface.co does, so downloads, resume, digest checks and disconnects are tested for real.
 *
 *   GET /api/models/<owner>/<repo>[/revision/<rev>][?blobs=true]
 *       { id, modelId, sha, pipeline_tag, siblings: [{ rfilename, blobId, size, lfs?: { sha256, size, pointerSize } }] }
 *       (size/lfs only with blobs=true, as on the hub; LFS = *.onnx, *.onnx_data*, *.bin, *.safetensors)
 *   GET /<owner>/<repo>/resolve/<rev>/<path>   with Range (206 + Content-Range; 416 past the end)
 *
 * Knobs: corrupt a file's bytes (listing keeps the true digest), cut the connection after N bytes, stream
 * slowly, ignore Range, redirect, and a log of every request.
 */
import { createHash } from 'node:crypto';
import { cp, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CatalogEntry } from '../../src/services/models/spec.ts';

export interface StandInRepo {
  dir: string;
  /** Commit id reported as `sha` and accepted as a revision beside `main`. */
  sha?: string;
  pipelineTag?: string;
}

export interface RequestRecord {
  method: string;
  path: string;
  repo?: string;
  file?: string;
  range?: string;
  status: number;
}

interface Knobs {
  corrupt?: boolean;
  cutAfter?: { bytes: number; times: number };
  stallAfter?: { bytes: number; times: number };
  slow?: { delayMs: number; chunkSize: number };
  ignoreRange?: boolean;
  redirect?: string;
}

const LFS = [/\.onnx$/, /\.onnx_data(_\d+)?$/, /\.bin$/, /\.safetensors$/];

export class HubStandIn {
  readonly requests: RequestRecord[] = [];
  readonly #repos = new Map<string, Required<Omit<StandInRepo, 'pipelineTag'>> & { pipelineTag?: string }>();
  readonly #knobs = new Map<string, Knobs>();
  readonly #sockets = new Set<Socket>();
  #server!: Server;
  url = '';

  static async start(repos: Record<string, string | StandInRepo> = {}): Promise<HubStandIn> {
    const hub = new HubStandIn();
    for (const [id, r] of Object.entries(repos)) hub.addRepo(id, r);
    hub.#server = createServer((req, res) => {
      hub.#handle(req, res).catch((err) => {
        if (!res.headersSent) res.writeHead(500).end(String(err));
        else res.destroy();
      });
    });
    hub.#server.on('connection', (s) => {
      hub.#sockets.add(s);
      s.on('close', () => hub.#sockets.delete(s));
    });
    await new Promise<void>((r) => hub.#server.listen(0, '127.0.0.1', r));
    hub.url = `http://127.0.0.1:${(hub.#server.address() as AddressInfo).port}`;
    return hub;
  }

  addRepo(id: string, r: string | StandInRepo): void {
    const repo = typeof r === 'string' ? { dir: r } : r;
    this.#repos.set(id, { dir: repo.dir, sha: repo.sha ?? createHash('sha1').update(id).digest('hex'), pipelineTag: repo.pipelineTag });
  }

  /** Serve wrong bytes for this file (one byte flipped); the listing still declares the true digest. */
  corrupt(repo: string, file: string): void {
    this.#knob(repo, file).corrupt = true;
  }
  /** Destroy the connection after `bytes` body bytes, for the next `times` requests of the file. */
  cutAfter(repo: string, file: string, bytes: number, times = 1): void {
    this.#knob(repo, file).cutAfter = { bytes, times };
  }
  /** Send `bytes` body bytes, then go silent (connection open) for the next `times` requests of the file. */
  stallAfter(repo: string, file: string, bytes: number, times = 1): void {
    this.#knob(repo, file).stallAfter = { bytes, times };
  }
  /** Stream the file in `chunkSize` pieces with `delayMs` between them. */
  slow(repo: string, file: string, delayMs: number, chunkSize = 16 * 1024): void {
    this.#knob(repo, file).slow = { delayMs, chunkSize };
  }
  /** Answer 200 with the whole file even when a Range is asked for. */
  ignoreRange(repo: string, file: string): void {
    this.#knob(repo, file).ignoreRange = true;
  }
  /** Answer resolve requests of the file with a 302 to `url`. */
  redirect(repo: string, file: string, url: string): void {
    this.#knob(repo, file).redirect = url;
  }
  reset(): void {
    this.#knobs.clear();
    this.requests.length = 0;
  }

  /** Download requests (resolve) of one file. */
  fileRequests(repo: string, file: string): RequestRecord[] {
    return this.requests.filter((r) => r.repo === repo && r.file === file);
  }
  count(repo: string, file: string): number {
    return this.fileRequests(repo, file).length;
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }

  #knob(repo: string, file: string): Knobs {
    const k = `${repo}/${file}`;
    if (!this.#knobs.has(k)) this.#knobs.set(k, {});
    return this.#knobs.get(k)!;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', 'http://stand-in');
    const rec: RequestRecord = { method: req.method ?? 'GET', path: u.pathname, status: 0 };
    if (typeof req.headers.range === 'string') rec.range = req.headers.range;
    this.requests.push(rec);
    const send = (status: number, body: string | object, headers: Record<string, string> = {}) => {
      rec.status = status;
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json', ...headers }).end(text);
    };

    const api = /^\/api\/models\/([^/]+\/[^/]+?)(?:\/revision\/([^/]+))?$/.exec(u.pathname);
    if (api) {
      const [, id, rev] = api;
      rec.repo = id;
      const repo = this.#repos.get(id);
      if (!repo || (rev && rev !== 'main' && rev !== repo.sha)) return send(404, { error: 'Repository not found' });
      const blobs = u.searchParams.get('blobs') === 'true';
      const siblings = [];
      for (const path of await listFiles(repo.dir)) {
        const bytes = await readFile(join(repo.dir, path));
        const blobId = createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
        const s: Record<string, unknown> = { rfilename: path };
        if (blobs) {
          s.blobId = blobId;
          s.size = bytes.length;
          if (LFS.some((re) => re.test(path))) {
            s.lfs = { sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length, pointerSize: 134 };
          }
        }
        siblings.push(s);
      }
      return send(200, { _id: id, id, modelId: id, sha: repo.sha, private: false, pipeline_tag: repo.pipelineTag, siblings });
    }

    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(u.pathname);
    if (!resolve) return send(404, 'Not found');
    const [, id, rev, rawPath] = resolve;
    const file = rawPath.split('/').map(decodeURIComponent).join('/');
    rec.repo = id;
    rec.file = file;
    const repo = this.#repos.get(id);
    if (!repo || (rev !== 'main' && rev !== repo.sha)) return send(404, 'Repository not found');
    const full = join(repo.dir, ...file.split('/'));
    if (relative(repo.dir, full).startsWith('..') || !(await stat(full).catch(() => undefined))?.isFile()) {
      return send(404, 'Entry not found');
    }
    const knobs = this.#knobs.get(`${id}/${file}`) ?? {};
    if (knobs.redirect) return send(302, '', { location: knobs.redirect });

    let bytes = await readFile(full);
    if (knobs.corrupt) {
      bytes = Buffer.from(bytes);
      bytes[Math.floor(bytes.length / 2)] ^= 0xff;
    }
    let start = 0;
    let end = bytes.length - 1;
    let status = 200;
    const headers: Record<string, string> = {
      'content-type': 'application/octet-stream',
      'accept-ranges': 'bytes',
      'x-repo-commit': repo.sha,
      etag: `"${createHash('sha256').update(bytes).digest('hex')}"`,
    };
    const m = /^bytes=(\d+)-(\d*)$/.exec(rec.range ?? '');
    if (m && !knobs.ignoreRange) {
      start = Number(m[1]);
      if (m[2]) end = Math.min(Number(m[2]), end);
      if (start >= bytes.length) return send(416, '', { 'content-range': `bytes */${bytes.length}` });
      status = 206;
      headers['content-range'] = `bytes ${start}-${end}/${bytes.length}`;
    }
    const body = bytes.subarray(start, end + 1);
    headers['content-length'] = String(body.length);
    rec.status = status;
    res.writeHead(status, headers);

    let limit = body.length;
    let stall = false;
    if (knobs.cutAfter && knobs.cutAfter.times > 0) {
      knobs.cutAfter.times--;
      limit = Math.min(limit, knobs.cutAfter.bytes);
    } else if (knobs.stallAfter && knobs.stallAfter.times > 0) {
      knobs.stallAfter.times--;
      limit = Math.min(limit, knobs.stallAfter.bytes);
      stall = true;
    }
    const chunkSize = knobs.slow?.chunkSize ?? 64 * 1024;
    for (let off = 0; off < limit; off += chunkSize) {
      if (res.destroyed) return;
      const chunk = body.subarray(off, Math.min(off + chunkSize, limit));
      if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
      if (knobs.slow) await new Promise((r) => setTimeout(r, knobs.slow!.delayMs));
    }
    if (stall) return; // never ends the response; close() destroys the socket
    if (limit < body.length) {
      // Let the bytes already written reach the client, then drop the connection mid-body.
      await new Promise((r) => setTimeout(r, 20));
      res.socket?.destroy();
      return;
    }
    res.end();
  }
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const rel = relative(dir, join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)).split(sep).join('/');
    if (!rel.split('/').some((seg) => seg.startsWith('.'))) out.push(rel);
  }
  return out.sort();
}

/** The tiny models under test/fixtures/models/, as hub repositories `svc-test/<name>`. */
export const FIXTURE_MODELS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'models');

export const FIXTURE_CATALOG: readonly CatalogEntry[] = [
  {
    name: 'tiny-llama:test',
    aliases: ['tiny-llama'],
    repo: 'svc-test/tiny-llama',
    dtype: 'fp32',
    kind: 'generation',
    capabilities: ['completion', 'tools', 'thinking'],
    components: ['model'],
    details: { family: 'llama' },
  },
  {
    name: 'tiny-bert-embed:test',
    aliases: ['tiny-bert-embed'],
    repo: 'svc-test/tiny-bert-embed',
    dtype: 'fp32',
    kind: 'embedding',
    capabilities: ['embedding'],
    components: ['model'],
    embedding: { pooling: 'mean', normalize: true },
    details: { family: 'bert' },
  },
  {
    name: 'tiny-bert-reranker:test',
    aliases: ['tiny-bert-reranker'],
    repo: 'svc-test/tiny-bert-reranker',
    dtype: 'fp32',
    kind: 'reranker',
    capabilities: [],
    components: ['model'],
    details: { family: 'bert' },
  },
  {
    name: 'tiny-whisper:test',
    aliases: ['tiny-whisper'],
    repo: 'svc-test/tiny-whisper',
    dtype: 'fp32',
    kind: 'speech',
    capabilities: [],
    components: ['encoder_model', 'decoder_model_merged'],
    details: { family: 'whisper' },
  },
  {
    name: 'tiny-vlm:test',
    aliases: ['tiny-vlm'],
    repo: 'svc-test/tiny-vlm',
    dtype: 'fp32',
    kind: 'generation',
    capabilities: ['completion', 'vision'],
    components: ['vision_encoder', 'embed_tokens', 'decoder_model_merged'],
    details: { family: 'idefics3' },
  },
];

/** A stand-in serving every fixture model; register FIXTURE_CATALOG in the catalog under test. */
/**
 * tiny-llama declaring a 4096-token context (its rotary positions are computed from position ids at run
 * time, so only the declared limit changes): for tests whose tool definitions and results do not fit in
 * the fixture's 512 positions. Served by startFixtureHub; not in FIXTURE_CATALOG.
 */
export const LONG_LLAMA: CatalogEntry = {
  ...FIXTURE_CATALOG[0]!,
  name: 'tiny-llama-long:test',
  aliases: [],
  repo: 'svc-test/tiny-llama-long',
};

async function longLlamaDir(): Promise<string> {
  const dir = join(await mkdtemp(join(tmpdir(), 'svc-long-llama-')), 'tiny-llama-long');
  await cp(join(FIXTURE_MODELS_DIR, 'tiny-llama'), dir, { recursive: true });
  for (const [f, k] of [['config.json', 'max_position_embeddings'], ['tokenizer_config.json', 'model_max_length']] as const) {
    const j = JSON.parse(await readFile(join(dir, f), 'utf8'));
    j[k] = 4096;
    await writeFile(join(dir, f), JSON.stringify(j));
  }
  return dir;
}

export async function startFixtureHub(): Promise<HubStandIn> {
  const names = ['tiny-llama', 'tiny-bert-embed', 'tiny-bert-reranker', 'tiny-whisper', 'tiny-vlm'];
  const longDir = await longLlamaDir();
  const hub = await HubStandIn.start({
    ...Object.fromEntries(names.map((n) => [`svc-test/${n}`, join(FIXTURE_MODELS_DIR, n)])),
    [LONG_LLAMA.repo]: longDir,
  });
  // the long copy is this hub's own: it goes with the hub
  const close = hub.close.bind(hub);
  hub.close = async () => {
    await close();
    await rm(dirname(longDir), { recursive: true, force: true });
  };
  return hub;
}

/**
 * Search over HTTP against a listening server, the same suite on a libSQL cluster (the embedded store)
 * and on a PostgreSQL cluster (a throw-away server from initdb + pg_ctl): resources and grants, documents
 * as tasks (text and a PDF through the document pipeline), keyword / semantic / hybrid queries, filters,
 * pagination, facets, highlights, reranking judged by torch's reference logits of the fixture
 * cross-encoder (both rerank routes), chat with documents citing the right page, and an unreachable
 * cluster answering 503 with Retry-After.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { type Harness, startHarness } from '../ollama/harness.ts';
import { makePdf } from '../../services/pdf/helpers.ts';
import { restartPostgres, startPostgres, stopPostgresOnly, type TestPostgres } from '../../support/postgres-search.ts';

const EMB = 'tiny-bert-embed:test';
const RERANKER = 'tiny-bert-reranker:test';
const LLM = 'tiny-llama:test';
const reference = JSON.parse(readFileSync(new URL('../../fixtures/models/reference-outputs.json', import.meta.url), 'utf8'));
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0) / (Math.hypot(...a) * Math.hypot(...b));

let h: Harness;
let pg: TestPostgres;
let admin = '';

type Body = Record<string, any>;
async function call(
  method: string,
  path: string,
  token: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Body; headers: Headers }> {
  const res = await fetch(`${h.srv.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {}, headers: res.headers };
}
const newKey = async (name: string, search?: unknown) => {
  const r = await call('POST', '/svc/v1/admin/keys', admin, { name, role: 'user', ...(search !== undefined ? { search } : {}) });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body as { id: string; token: string; search: Body };
};

before(async () => {
  h = await startHarness({ defaultEmbeddingModel: EMB });
  admin = (await h.srv.keys.create({ name: 'admin', role: 'admin' })).token;
  pg = await startPostgres();
});
after(async () => {
  h.steer(undefined);
  await h?.close();
  await pg?.stop();
});

describe('search administration and access', () => {
  it('clusters, tenants and collections: create, list, get, conflicts, admin only', async () => {
    const clusters = await call('GET', '/svc/v1/search/clusters', admin);
    assert.equal(clusters.status, 200);
    // the default cluster is the server's own store: libSQL, or PostgreSQL when the whole store is
    const storeKind = process.env.SVC_TEST_DB === 'postgres' ? 'postgres' : 'libsql';
    assert.ok(clusters.body.data.some((c: Body) => c.id === 'default' && c.kind === storeKind), JSON.stringify(clusters.body));
    const def = await call('GET', '/svc/v1/search/clusters/default', admin);
    assert.equal(def.body.status.reachable, true);
    assert.equal(def.body.status.full_text, storeKind === 'postgres' ? 'tsvector-ts_rank_cd' : 'fts5-bm25');
    assert.equal((await call('POST', '/svc/v1/search/clusters/default/tenants', admin, { name: 'acme' })).status, 201);
    assert.equal((await call('POST', '/svc/v1/search/clusters/default/tenants', admin, { name: 'acme' })).status, 409);
    assert.equal((await call('POST', '/svc/v1/search/clusters/nope/tenants', admin, { name: 'x' })).status, 404);
    assert.equal((await call('POST', '/svc/v1/search/clusters/default/tenants', admin, { name: '../bad' })).status, 400);
    const col = await call('POST', '/svc/v1/search/clusters/default/tenants/acme/collections', admin, { name: 'docs' });
    assert.equal(col.status, 201);
    assert.match(col.body.id, /^scol_/);
    await call('POST', '/svc/v1/search/clusters/default/tenants/acme/collections', admin, { name: 'secret' });
    const list = await call('GET', '/svc/v1/search/clusters/default/tenants/acme/collections', admin);
    assert.deepEqual(list.body.data.map((c: Body) => c.name), ['docs', 'secret']);
    assert.equal((await call('GET', '/svc/v1/search/clusters/default/tenants/acme/collections/docs', admin)).body.id, col.body.id);
    const user = await newKey('plain');
    const refused = await call('POST', '/svc/v1/search/clusters', user.token, { id: 'x', url: 'file:/tmp/x.db' });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error, 'forbidden');
  });

  it('the token reveal states the reach: a new key preselects the default cluster; grants and no-search keys', async () => {
    const plain = await newKey('reach-plain');
    assert.deepEqual(plain.search, { cluster: 'default', all_collections: false, grants: [] });
    const granted = await newKey('reach-granted', { grants: [{ tenant: 'acme', collection: 'docs', access: 'write' }] });
    assert.deepEqual(granted.search, {
      cluster: 'default',
      all_collections: false,
      grants: [{ tenant: 'acme', collection: 'docs', access: 'write' }],
    });
    const none = await newKey('reach-none', false);
    assert.equal(none.search.cluster, null);
    // a key without search access is refused with its own reason, on every search route
    for (
      const [m, p] of [['GET', '/svc/v1/search/collections'], ['POST', '/svc/v1/search/tenants/acme/collections/docs/query'], [
        'POST',
        '/svc/v1/search/chat',
      ]] as const
    ) {
      const r = await call(
        m,
        p,
        none.token,
        m === 'POST' ? (p.endsWith('chat') ? { model: LLM, messages: [{ role: 'user', content: 'hi' }] } : { q: 'x' }) : undefined,
      );
      assert.equal(r.status, 403, p);
      assert.equal(r.body.error, 'search_access_denied', p);
    }
    // an unknown cluster at creation is refused before any key exists
    const bad = await call('POST', '/svc/v1/admin/keys', admin, { name: 'bad', search: { cluster: 'nope' } });
    assert.equal(bad.status, 404);
    assert.ok(!(await h.srv.keys.list()).some((k) => k.name === 'bad'));
    // the admin changes a key's access later
    const put = await call('PUT', `/svc/v1/admin/keys/${none.id}/search`, admin, {
      search: { grants: [{ tenant: 'acme', access: 'read' }] },
    });
    assert.deepEqual(put.body.search, {
      cluster: 'default',
      all_collections: false,
      grants: [{ tenant: 'acme', collection: null, access: 'read' }],
    });
    assert.equal((await call('GET', '/svc/v1/search/collections', none.token)).status, 200);
  });

  it('grants: 404 outside them (the collection is not revealed), read-only keys cannot write', async () => {
    const writer = await newKey('writer', { grants: [{ tenant: 'acme', collection: 'docs', access: 'write' }] });
    const reader = await newKey('reader', { grants: [{ tenant: 'acme', access: 'read' }] });
    const stranger = await newKey('stranger');
    const add = (t: string, col: string) =>
      call('POST', `/svc/v1/search/tenants/acme/collections/${col}/documents`, t, {
        documents: [{ id: 'g1', text: 'granite quarry report', metadata: {} }],
      });
    assert.equal((await add(writer.token, 'docs')).status, 200);
    const hidden = await add(writer.token, 'secret');
    const missing = await add(writer.token, 'no-such-collection');
    assert.equal(hidden.status, 404);
    assert.equal(missing.status, 404);
    assert.equal(hidden.body.error, missing.body.error);
    assert.equal(hidden.body.message.replace('secret', 'X'), missing.body.message.replace('no-such-collection', 'X'));
    const ro = await add(reader.token, 'docs');
    assert.equal(ro.status, 403);
    assert.equal(ro.body.error, 'search_write_denied');
    const q = await call('POST', '/svc/v1/search/tenants/acme/collections/docs/query', reader.token, { q: 'granite' });
    assert.equal(q.status, 200);
    assert.equal(q.body.data[0].document_id, 'g1');
    assert.equal((await call('POST', '/svc/v1/search/tenants/acme/collections/docs/query', stranger.token, { q: 'granite' })).status, 404);
    assert.equal((await call('GET', '/svc/v1/search/tenants/acme/collections/docs/documents/g1', stranger.token)).status, 404);
    assert.deepEqual((await call('GET', '/svc/v1/search/collections', stranger.token)).body.data, []);
    assert.deepEqual((await call('GET', '/svc/v1/search/collections', reader.token)).body.data.map((c: Body) => c.name), [
      'docs',
      'secret',
    ]);
  });

  it('deleting a tenant removes its collections, their documents and the grants on them', async () => {
    await call('POST', '/svc/v1/search/clusters/default/tenants', admin, { name: 'gone' });
    const col = (await call('POST', '/svc/v1/search/clusters/default/tenants/gone/collections', admin, { name: 'c' })).body;
    const k = await newKey('gone-writer', { grants: [{ tenant: 'gone', collection: 'c', access: 'write' }] });
    assert.equal(
      (await call('POST', '/svc/v1/search/tenants/gone/collections/c/documents', k.token, {
        documents: [{ id: 'd', text: 'ephemeral words here' }],
      })).status,
      200,
    );
    const chunks = async () =>
      Number(
        (await h.srv.store.db.selectFrom('retrieval_chunks').select((eb) => eb.fn.countAll<number>().as('n')).where('index_id', '=', col.id)
          .executeTakeFirst())!.n,
      );
    assert.ok((await chunks()) > 0);
    assert.equal((await call('DELETE', '/svc/v1/search/clusters/default/tenants/gone', admin)).status, 200);
    assert.equal(await chunks(), 0);
    assert.equal((await call('GET', '/svc/v1/search/clusters/default/tenants/gone', admin)).status, 404);
    assert.equal((await call('GET', '/svc/v1/search/clusters/default/tenants/gone/collections/c', admin)).status, 404);
    assert.deepEqual((await call('GET', `/svc/v1/admin/keys/${k.id}/search`, admin)).body.search.grants, []);
  });
});

const CORPUS = [
  {
    id: 'astro-1',
    text: '# Telescopes\n\nThe refracting telescope uses lenses to gather starlight from distant galaxies.',
    metadata: { topic: 'astronomy', year: 2019, lang: 'en' },
  },
  {
    id: 'astro-2',
    text: '# Planets\n\nJupiter is the largest planet; its moons were seen through a telescope by Galileo.',
    metadata: { topic: 'astronomy', year: 2021, lang: 'en' },
  },
  {
    id: 'cook-1',
    text: '# Bread\n\nKnead the dough, let it rise, then bake the bread in a hot oven.',
    metadata: { topic: 'cooking', year: 2020, lang: 'en' },
  },
  {
    id: 'cook-2',
    text: '# Soup\n\nSimmer onions and carrots slowly for a rich vegetable soup.',
    metadata: { topic: 'cooking', year: 2023, lang: 'fr' },
  },
  {
    id: 'sail-1',
    text: '# Knots\n\nA bowline knot makes a fixed loop at the end of a rope on a sailing boat.',
    metadata: { topic: 'sailing', year: 2018, lang: 'en' },
  },
];

for (const kind of ['libsql', 'postgres'] as const) {
  describe(`search on a ${kind} cluster`, () => {
    let token = '';
    let cluster = 'default';
    const base = () => `/svc/v1/search/tenants/lib/collections/books`;
    const query = (body: Body, t = token) => call('POST', `${base()}/query`, t, body);

    before(async () => {
      if (kind === 'postgres') {
        cluster = 'pg';
        const c = await call('POST', '/svc/v1/search/clusters', admin, { id: 'pg', kind: 'postgres', url: pg.url });
        assert.equal(c.status, 201, JSON.stringify(c.body));
        assert.doesNotMatch(JSON.stringify(c.body), /password/);
      }
      assert.equal((await call('POST', `/svc/v1/search/clusters/${cluster}/tenants`, admin, { name: 'lib' })).status, 201);
      assert.equal(
        (await call('POST', `/svc/v1/search/clusters/${cluster}/tenants/lib/collections`, admin, { name: 'books' })).status,
        201,
      );
      token = (await newKey(`${kind}-user`, { cluster, grants: [{ tenant: 'lib', collection: 'books', access: 'write' }] })).token;
    });

    it('cluster status names the full-text and vector methods', async () => {
      const s = (await call('GET', `/svc/v1/search/clusters/${cluster}`, admin)).body.status;
      assert.equal(s.reachable, true);
      if (kind === 'postgres') {
        assert.equal(s.full_text, 'tsvector-ts_rank_cd');
        // Debian bookworm ships no pgvector: the exact scan serves the vectors, and the status says so
        assert.equal(s.vectors, 'exact-scan');
      } else assert.match(s.vectors, /^(libsql-vector-index|exact-scan)$/);
    });

    it('adds text documents as a task (embedded), gets and lists them; replace keeps one version', async () => {
      const r = await call('POST', `${base()}/documents`, token, { documents: CORPUS });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.data.length, 5);
      for (const d of r.body.data) assert.ok(d.chunks >= 1 && d.embedded === d.chunks, JSON.stringify(d));
      assert.equal(r.body.embedding_model, EMB);
      const got = await call('GET', `${base()}/documents/cook-1`, token);
      assert.equal(got.status, 200);
      assert.deepEqual(got.body.metadata, CORPUS[2]!.metadata);
      assert.match(got.body.chunks[0].text, /Knead the dough/);
      assert.deepEqual(got.body.chunks[0].heading_path, ['Bread']);
      // replace: the old words are gone, the new ones found
      await call('POST', `${base()}/documents`, token, {
        documents: [{
          id: 'cook-1',
          text: '# Bread\n\nKnead the dough, proof it overnight, bake in a hot oven.',
          metadata: CORPUS[2]!.metadata,
        }],
      });
      assert.equal((await query({ q: 'rise', mode: 'keyword' })).body.data.length, 0);
      assert.equal((await query({ q: 'overnight', mode: 'keyword' })).body.data[0].document_id, 'cook-1');
      const list = await call('GET', `${base()}/documents?limit=2`, token);
      assert.deepEqual(list.body.data.map((d: Body) => d.id), ['astro-1', 'astro-2']);
      assert.equal(list.body.has_more, true);
    });

    it('keyword query ranks by BM25 / ts_rank_cd with page, chunk and scores; highlights mark the words', async () => {
      const r = await query({ q: 'telescope galaxies', mode: 'keyword', highlight: true });
      assert.equal(r.status, 200);
      assert.deepEqual(r.body.data.map((d: Body) => d.document_id), ['astro-1', 'astro-2']);
      const top = r.body.data[0];
      assert.equal(top.chunk, 0);
      assert.equal(top.scores.keyword_rank, 1);
      assert.equal(top.scores.semantic_rank, null);
      const words = top.highlights.map((x: Body) => x.term.toLowerCase());
      assert.deepEqual([...new Set(words)].sort(), ['galaxies', 'telescope']);
      for (const x of top.highlights) {
        assert.equal(top.text.slice(x.start, x.end), x.term);
        assert.match(x.passage, new RegExp(`<em>${x.term}</em>`));
      }
    });

    it("semantic query orders by the embedding model's own cosine", async () => {
      const r = await query({ q: 'bowline loop rope', mode: 'semantic', limit: 5 });
      assert.equal(r.status, 200);
      assert.equal(r.body.data.length, 5);
      const texts = r.body.data.map((d: Body) => d.text);
      const emb = await call('POST', '/v1/embeddings', token, { model: EMB, input: ['bowline loop rope', ...texts] });
      const sims = emb.body.data.slice(1).map((d: Body) => cosine(emb.body.data[0].embedding, d.embedding));
      for (let i = 1; i < sims.length; i++) assert.ok(sims[i - 1]! >= sims[i]! - 1e-4, `semantic order ${sims}`);
      for (const d of r.body.data) assert.equal(d.scores.keyword_rank, null);
    });

    it('hybrid fuses both lists; the weight moves it between keyword and semantic order', async () => {
      const kw = (await query({ q: 'telescope soup', mode: 'keyword', limit: 5 })).body.data.map((d: Body) => d.id);
      const sem = (await query({ q: 'telescope soup', mode: 'semantic', limit: 5 })).body.data.map((d: Body) => d.id);
      const h0 = (await query({ q: 'telescope soup', mode: 'hybrid', semantic_ratio: 0, limit: 5 })).body;
      const h1 = (await query({ q: 'telescope soup', mode: 'hybrid', semantic_ratio: 1, limit: 5 })).body.data.map((d: Body) => d.id);
      assert.deepEqual(h0.data.map((d: Body) => d.id).slice(0, kw.length), kw);
      assert.deepEqual(h1, sem);
      const mid = (await query({ q: 'telescope soup', limit: 5 })).body;
      assert.equal(mid.mode, 'hybrid');
      assert.ok(mid.data.some((d: Body) => d.scores.keyword_rank !== null && d.scores.semantic_rank !== null));
    });

    it('filters: equality, ranges, in, ne; pagination; facet counts', async () => {
      const ids = async (filter: Body, q = 'the') =>
        (await query({ q, mode: 'semantic', filter, limit: 20 })).body.data.map((d: Body) => d.document_id).sort();
      assert.deepEqual(await ids({ topic: 'cooking' }), ['cook-1', 'cook-2']);
      assert.deepEqual(await ids({ year: { gte: 2020, lt: 2023 } }), ['astro-2', 'cook-1']);
      assert.deepEqual(await ids({ topic: { in: ['sailing', 'cooking'] }, lang: 'en' }), ['cook-1', 'sail-1']);
      assert.deepEqual(await ids({ lang: { ne: 'en' } }), ['cook-2']);
      assert.deepEqual(await ids({ year: '2019' }), []); // a string never equals a number
      const bad = await query({ q: 'x', filter: { year: { near: 3 } } });
      assert.equal(bad.status, 400);
      const p1 = (await query({ q: 'the', mode: 'semantic', limit: 2, offset: 0 })).body;
      const p2 = (await query({ q: 'the', mode: 'semantic', limit: 2, offset: 2 })).body;
      const p3 = (await query({ q: 'the', mode: 'semantic', limit: 2, offset: 4 })).body;
      const all = [...p1.data, ...p2.data, ...p3.data].map((d: Body) => d.id);
      assert.equal(new Set(all).size, 5);
      assert.equal(p1.has_more, true);
      assert.equal(p3.has_more, false);
      const f = (await query({ q: 'the', mode: 'semantic', facets: ['topic', 'lang'], limit: 1 })).body;
      assert.deepEqual(f.facet_distribution, { topic: { astronomy: 2, cooking: 2, sailing: 1 }, lang: { en: 4, fr: 1 } });
    });

    it('a PDF through the document pipeline: chunks per page, the hit names its page', async () => {
      const pdf = await makePdf(3, {
        lines: (p) =>
          [['Introduction to the harbour survey.'], ['The lighthouse keeper logged a walrus sighting.'], [
            'Appendix with tide tables.',
          ]][p - 1]!,
      });
      const form = new FormData();
      form.append('file', new Blob([pdf as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), 'survey.pdf');
      form.append('id', 'survey');
      form.append('metadata', JSON.stringify({ topic: 'sailing', year: 2024 }));
      const r = await fetch(`${h.srv.url}${base()}/documents`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: form,
      });
      assert.equal(r.status, 200, await r.clone().text());
      const got = (await call('GET', `${base()}/documents/survey`, token)).body;
      assert.deepEqual(got.chunks.map((c: Body) => c.pages), [[1], [2], [3]]);
      assert.equal(got.filename, 'survey.pdf');
      const q = (await query({ q: 'walrus lighthouse', mode: 'keyword' })).body.data[0];
      assert.equal(q.document_id, 'survey');
      assert.equal(q.page, 2);
      const bad = await fetch(`${h.srv.url}${base()}/documents`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: (() => {
          const f = new FormData();
          f.append('file', new Blob([new Uint8Array([0, 1, 2, 3, 255, 254])]), 'x.bin');
          f.append('id', 'x');
          return f;
        })(),
      });
      assert.equal(bad.status, 415);
    });

    it('rerank inside a query reorders the top candidates by the cross-encoder', async () => {
      const plain = (await query({ q: 'telescope bread', mode: 'keyword', limit: 5 })).body.data;
      const rr = (await query({ q: 'telescope bread', mode: 'keyword', limit: 5, rerank: { model: RERANKER, candidates: 5 } })).body.data;
      assert.deepEqual(new Set(rr.map((d: Body) => d.id)), new Set(plain.map((d: Body) => d.id)));
      const direct = await call('POST', '/v1/rerank', token, {
        model: RERANKER,
        query: 'telescope bread',
        documents: plain.map((d: Body) => d.text),
      });
      assert.deepEqual(rr.map((d: Body) => d.text), direct.body.results.map((x: Body) => plain[x.index].text));
      for (const d of rr) assert.equal(typeof d.scores.rerank, 'number');
    });

    it('documents as jobs (Prefer: respond-async), delete by filter and by id', async () => {
      const r = await call('POST', `${base()}/documents`, token, {
        documents: [{ id: 'tmp-1', text: 'zanzibar spice', metadata: { batch: 'tmp' } }, {
          id: 'tmp-2',
          text: 'zanzibar clove',
          metadata: { batch: 'tmp' },
        }],
      }, { prefer: 'respond-async' });
      assert.equal(r.status, 202);
      let job: Body = {};
      for (let i = 0; i < 100; i++) {
        job = (await call('GET', `/svc/v1/jobs/${r.body.job_id}`, token)).body;
        if (job.status !== 'processing') break;
        await new Promise((res) => setTimeout(res, 100));
      }
      assert.equal(job.status, 'completed', JSON.stringify(job));
      assert.equal((await query({ q: 'zanzibar', mode: 'keyword' })).body.data.length, 2);
      const del = await call('POST', `${base()}/documents/delete`, token, { filter: { batch: 'tmp' } });
      assert.deepEqual(del.body.ids.sort(), ['tmp-1', 'tmp-2']);
      assert.equal((await query({ q: 'zanzibar', mode: 'keyword' })).body.data.length, 0);
      assert.equal((await call('DELETE', `${base()}/documents/sail-1`, token)).status, 200);
      assert.equal((await call('GET', `${base()}/documents/sail-1`, token)).status, 404);
      assert.equal((await call('DELETE', `${base()}/documents/sail-1`, token)).status, 404);
    });
  });
}

describe('rerank routes', () => {
  const pairs = reference.rerank.pairs.filter((p: Body) => p.query === 'what is the capital of france');
  it("/v1/rerank (Cohere/Jina shape) scores equal torch's reference for the fixture cross-encoder", async () => {
    const r = await call('POST', '/v1/rerank', admin, {
      model: RERANKER,
      query: pairs[0].query,
      documents: pairs.map((p: Body) => p.passage),
      return_documents: true,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const want = pairs.map((p: Body, index: number) => ({ index, score: sigmoid(p.logit) })).sort((a: Body, b: Body) => b.score - a.score);
    assert.deepEqual(r.body.results.map((x: Body) => x.index), want.map((x: Body) => x.index));
    for (const [i, x] of r.body.results.entries()) {
      assert.ok(Math.abs(x.relevance_score - want[i].score) < 1e-4, `${x.relevance_score} vs ${want[i].score}`);
      assert.equal(x.document.text, pairs[x.index].passage);
    }
    const top1 = await call('POST', '/v1/rerank', admin, {
      model: RERANKER,
      query: pairs[0].query,
      documents: pairs.map((p: Body) => ({ text: p.passage })),
      top_n: 1,
    });
    assert.equal(top1.body.results.length, 1);
    assert.equal(top1.body.results[0].document, undefined);
    const wrongKind = await call('POST', '/v1/rerank', admin, { model: EMB, query: 'q', documents: ['a'] });
    assert.equal(wrongKind.status, 400);
    assert.equal((await call('POST', '/v1/rerank', admin, { model: RERANKER, query: 'q', documents: [] })).status, 400);
  });

  it('/svc/v1/rerank is a task: inline, or a job with Prefer: respond-async', async () => {
    const body = { model: RERANKER, query: pairs[0].query, documents: pairs.map((p: Body) => p.passage) };
    const inline = await call('POST', '/svc/v1/rerank', admin, body);
    assert.equal(inline.status, 200);
    assert.equal(inline.body.results.length, 2);
    const job = await call('POST', '/svc/v1/rerank', admin, body, { prefer: 'respond-async' });
    assert.equal(job.status, 202);
    let j: Body = {};
    for (let i = 0; i < 100 && j.status !== 'completed'; i++) {
      j = (await call('GET', `/svc/v1/jobs/${job.body.job_id}`, admin)).body;
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.deepEqual(j.result.results.map((x: Body) => x.index), inline.body.results.map((x: Body) => x.index));
  });
});

describe('chat with documents', () => {
  let token = '';
  before(async () => {
    await call('POST', '/svc/v1/search/clusters/default/tenants', admin, { name: 'kb' });
    await call('POST', '/svc/v1/search/clusters/default/tenants/kb/collections', admin, { name: 'manuals' });
    await call('POST', '/svc/v1/search/clusters/default/tenants/kb/collections', admin, { name: 'private' });
    token = (await newKey('chatter', { grants: [{ tenant: 'kb', collection: 'manuals', access: 'write' }] })).token;
    const admin2 = admin;
    const pdf = await makePdf(3, {
      lines: (p) =>
        [['Unboxing and safety notes.'], ['To reset the thermostat hold the flamingo button for ten seconds.'], [
          'Warranty terms.',
        ]][p - 1]!,
    });
    const r = await call('POST', '/svc/v1/search/tenants/kb/collections/manuals/documents', token, {
      input_format: 'Base64EncodedFile',
      file: Buffer.from(pdf).toString('base64'),
      id: 'thermostat-manual',
      metadata: { product: 'thermostat' },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    // a readable-by-nobody collection holds a better match: it must not be used
    const p = await call('POST', '/svc/v1/admin/keys', admin2, {
      name: 'private-writer',
      role: 'user',
      search: { grants: [{ tenant: 'kb', collection: 'private', access: 'write' }] },
    });
    await call('POST', '/svc/v1/search/tenants/kb/collections/private/documents', p.body.token, {
      documents: [{ id: 'leak', text: 'reset thermostat flamingo button secret procedure' }],
    });
  });

  it('answers with citations naming the document, page and chunk of the source it cites', async () => {
    await h.steered('Hold the button [1].', async () => {
      const r = await call('POST', '/svc/v1/search/chat', token, {
        model: LLM,
        messages: [{ role: 'user', content: 'How do I reset the thermostat flamingo button?' }],
        sources: 3,
        max_tokens: 40,
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.message.content, 'Hold the button [1].');
      assert.equal(r.body.citations.length, 1);
      const c = r.body.citations[0];
      assert.equal(c.document_id, 'thermostat-manual');
      assert.equal(c.page, 2);
      assert.equal(c.collection, 'manuals');
      assert.equal(typeof c.chunk, 'number');
      assert.match(c.quote, /flamingo/);
      assert.ok(r.body.sources.every((s: Body) => s.document_id !== 'leak'));
    });
  });

  it("query rewriting: the chat model's rewrite is what is searched, and the answer says so", async () => {
    await h.steered('flamingo thermostat', async () => {
      const r = await call('POST', '/svc/v1/search/tenants/kb/collections/manuals/query', token, {
        q: 'restarting heating gadgets',
        mode: 'keyword',
        rewrite: { model: LLM },
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.rewritten_query, 'flamingo thermostat');
      assert.equal(r.body.data[0].document_id, 'thermostat-manual');
      assert.equal(r.body.data[0].page, 2);
    });
    // without the rewrite the question's own words find nothing
    const plain = await call('POST', '/svc/v1/search/tenants/kb/collections/manuals/query', token, {
      q: 'restarting heating gadgets',
      mode: 'keyword',
    });
    assert.equal(plain.body.data.length, 0);
  });

  it('streams: sources first, text deltas, then the citations; a collection outside the grants is 404', async () => {
    await h.steered('See [1]', async () => {
      const res = await fetch(`${h.srv.url}/svc/v1/search/chat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: LLM,
          stream: true,
          collections: [{ tenant: 'kb', collection: 'manuals' }],
          messages: [{ role: 'user', content: 'thermostat flamingo reset' }],
        }),
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type')!, /text\/event-stream/);
      const events = (await res.text()).split('\n\n').filter(Boolean).map((e) => ({
        type: /^event: (.+)$/m.exec(e)![1],
        data: JSON.parse(/^data: (.+)$/m.exec(e)![1]!),
      }));
      assert.equal(events[0]!.type, 'search.chat.sources');
      assert.equal(events.at(-1)!.type, 'search.chat.completed');
      const text = events.filter((e) => e.type === 'search.chat.delta').map((e) => e.data.content).join('');
      assert.equal(text, 'See [1]');
      assert.equal(events.at(-1)!.data.citations[0].page, 2);
    });
    const hidden = await call('POST', '/svc/v1/search/chat', token, {
      model: LLM,
      collections: [{ tenant: 'kb', collection: 'private' }],
      messages: [{ role: 'user', content: 'x' }],
    });
    assert.equal(hidden.status, 404);
  });
});

describe('an unreachable cluster', () => {
  it('answers 503 service_unavailable with Retry-After, never 500; an acknowledged write is there when the cluster is back, a refused one is not', async () => {
    await call('POST', '/svc/v1/search/clusters', admin, { id: 'down', kind: 'postgres', url: 'postgres://svc@127.0.0.1:1/postgres' });
    await call('POST', '/svc/v1/search/clusters/down/tenants', admin, { name: 't' });
    await call('POST', '/svc/v1/search/clusters/down/tenants/t/collections', admin, { name: 'c' });
    const k = await newKey('down-user', { cluster: 'down', grants: [{ tenant: 't', access: 'write' }] });
    const q = await call('POST', '/svc/v1/search/tenants/t/collections/c/query', k.token, { q: 'anything' });
    assert.equal(q.status, 503, JSON.stringify(q.body));
    assert.equal(q.body.error, 'service_unavailable');
    assert.ok(Number(q.headers.get('retry-after')) > 0);
    const st = (await call('GET', '/svc/v1/search/clusters/down', admin)).body.status;
    assert.equal(st.reachable, false);

    // a cluster that goes away after it was used: 503, then served again once it is back
    const pg2 = await startPostgres();
    try {
      await call('POST', '/svc/v1/search/clusters', admin, { id: 'flaky', kind: 'postgres', url: pg2.url });
      await call('POST', '/svc/v1/search/clusters/flaky/tenants', admin, { name: 't' });
      await call('POST', '/svc/v1/search/clusters/flaky/tenants/t/collections', admin, { name: 'c' });
      const f = await newKey('flaky-user', { cluster: 'flaky', grants: [{ tenant: 't', access: 'write' }] });
      assert.equal(
        (await call('POST', '/svc/v1/search/tenants/t/collections/c/documents', f.token, {
          documents: [{ id: 'kept', text: 'acknowledged write of a quasar' }],
        })).status,
        200,
      );
      stopPostgresOnly(pg2);
      const w = await call('POST', '/svc/v1/search/tenants/t/collections/c/documents', f.token, {
        documents: [{ id: 'lost', text: 'never acknowledged' }],
      });
      assert.equal(w.status, 503, JSON.stringify(w.body));
      assert.ok(w.headers.get('retry-after'));
      const r = await call('POST', '/svc/v1/search/tenants/t/collections/c/query', f.token, { q: 'quasar', mode: 'keyword' });
      assert.equal(r.status, 503);
      // back again: the acknowledged document is there, the refused one is not
      restartPostgres(pg2);
      let back: Awaited<ReturnType<typeof call>> | undefined;
      for (let i = 0; i < 20; i++) {
        back = await call('POST', '/svc/v1/search/tenants/t/collections/c/query', f.token, {
          q: 'quasar acknowledged never',
          mode: 'keyword',
        });
        if (back.status === 200) break;
        await new Promise((res) => setTimeout(res, 250));
      }
      assert.equal(back!.status, 200, JSON.stringify(back!.body));
      assert.deepEqual(back!.body.data.map((d: Body) => d.document_id), ['kept']);
    } finally {
      await pg2.stop();
    }
  });
});

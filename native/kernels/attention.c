// A decoder layer's attention for a few new positions, the steps svc's rewritten graphs take (rotary embedding of
// the queries and new keys, scores against the cached and the new keys divided by a constant, the mask added,
// softmax, the values summed), in one call instead of ONNX Runtime's ~45 nodes. Query head h reads key/value
// head h / (heads / kv_heads). Sums go in another order than ONNX Runtime's, so results agree to float rounding,
// not bit for bit. Made for decode steps: each score is one dot product, so many new positions are better left
// to ONNX Runtime's matrix products.
#include "attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include "avx2.h"
#include <immintrin.h>
#define AVX512_TARGET __attribute__((target("avx512f,fma")))
#endif

// x rotated as RotaryEmbedding (interleaved = 0) does: the first half with cos and -sin of the second, the second
// with cos and +sin of the first.
static void rotate(const float *x, const float *cos, const float *sin, int d, float *y) {
  const int h = d / 2;
  for (int i = 0; i < h; i++) {
    y[i] = x[i] * cos[i] - x[i + h] * sin[i];
    y[i + h] = x[i + h] * cos[i] + x[i] * sin[i];
  }
}

// One query head at one position: its scores against t keys (the first p cached, the rest new), the mask
// added, softmax, the values summed into o.
typedef struct {
  const float *q, *past_k, *new_k, *past_v, *new_v, *mask;
  int p, t, d;
  float divisor;
  float *scores, *o;
} Head;

static void head_portable(const Head *h) {
  const int d = h->d;
  float max = -INFINITY;
  for (int i = 0; i < h->t; i++) {
    const float *key = i < h->p ? h->past_k + (int64_t)i * d : h->new_k + (int64_t)(i - h->p) * d;
    float s = 0;
    for (int j = 0; j < d; j++) s += h->q[j] * key[j];
    h->scores[i] = s / h->divisor + h->mask[i];
    if (h->scores[i] > max) max = h->scores[i];
  }
  float sum = 0;
  for (int i = 0; i < h->t; i++) sum += h->scores[i] = expf(h->scores[i] - max);
  memset(h->o, 0, sizeof(float) * (size_t)d);
  for (int i = 0; i < h->t; i++) {
    const float *value = i < h->p ? h->past_v + (int64_t)i * d : h->new_v + (int64_t)(i - h->p) * d;
    for (int j = 0; j < d; j++) h->o[j] += h->scores[i] * value[j];
  }
  const float inv = 1.f / sum;
  for (int j = 0; j < d; j++) h->o[j] *= inv;
}

// The query heads that read one key/value head, at one position, for the vector paths below.
typedef struct {
  const float *q; // [heads][d], rotated
  int heads;
  const float *past_k, *new_k, *past_v, *new_v, *mask;
  int p, t, d;
  float divisor;
  float *scores; // [heads][t rounded up to 16]
  float *o;      // [heads][d]
} Group;

#if defined(__x86_64__)
// e^x for 16 floats: x = n·ln 2 + r, e^r by its Taylor series to r^6 (|r| <= ln 2 / 2: about one unit in the last
// place), times 2^n; 0 below -104, where single precision has nothing left.
AVX512_TARGET static inline __m512 exp16(__m512 x) {
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 e = _mm512_set1_ps(1.f / 720);
  e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.f / 120));
  e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.f / 24));
  e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.f / 6));
  e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(0.5f));
  e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.f));
  e = _mm512_fmadd_ps(e, r, _mm512_set1_ps(1.f));
  const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-104.f), _CMP_GE_OQ);
  return _mm512_maskz_scalef_ps(live, e, n);
}

// The 16 sums of a[0..15]'s lanes, in order, in one vector: pairs interleaved and added, then quads, then the
// four 128-bit quarters of each vector.
AVX512_TARGET static inline __m512 sums16(const __m512 *a) {
  __m512 b[8], c[4];
  for (int i = 0; i < 8; i++) b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
  for (int i = 0; i < 4; i++) {
    const __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
    c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  // c[i] holds keys 4i..4i+3 in each quarter: add the quarters
  const __m512 d0 = _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], 0x88), _mm512_shuffle_f32x4(c[0], c[1], 0xdd));
  const __m512 d1 = _mm512_add_ps(_mm512_shuffle_f32x4(c[2], c[3], 0x88), _mm512_shuffle_f32x4(c[2], c[3], 0xdd));
  return _mm512_add_ps(_mm512_shuffle_f32x4(d0, d1, 0x88), _mm512_shuffle_f32x4(d0, d1, 0xdd));
}

// The query heads that read one key/value head, at one position: head_portable's steps with d (a multiple of 16,
// at most 128) in registers. Keys go 16 at a time, each block read once for all heads of the group (and from the
// first cache by all but the first); the values once per few heads. Inlined with d a constant where it is one.

AVX512_TARGET static inline __attribute__((always_inline)) void group_avx512(const Group *g, const int d) {
  const int c = d / 16, t = g->t, tp = (t + 15) & ~15;
  const __m512 divisor = _mm512_set1_ps(g->divisor);
  for (int i0 = 0; i0 < t; i0 += 16) {
    const int nk = t - i0 < 16 ? t - i0 : 16;
    const __mmask16 in = nk == 16 ? 0xffff : (__mmask16)((1u << nk) - 1);
    const float *key[16];
    for (int k = 0; k < 16; k++) {
      const int i = i0 + (k < nk ? k : 0);
      key[k] = i < g->p ? g->past_k + (int64_t)i * d : g->new_k + (int64_t)(i - g->p) * d;
    }
    const __m512 mask = _mm512_maskz_loadu_ps(in, g->mask + i0);
    for (int h = 0; h < g->heads; h++) {
      __m512 q[8], acc[16];
      for (int j = 0; j < c; j++) q[j] = _mm512_loadu_ps(g->q + (int64_t)h * d + 16 * j);
      for (int k = 0; k < 16; k++) {
        acc[k] = _mm512_mul_ps(q[0], _mm512_loadu_ps(key[k]));
        for (int j = 1; j < c; j++) acc[k] = _mm512_fmadd_ps(q[j], _mm512_loadu_ps(key[k] + 16 * j), acc[k]);
      }
      _mm512_storeu_ps(g->scores + (int64_t)h * tp + i0, _mm512_add_ps(_mm512_div_ps(sums16(acc), divisor), mask));
    }
  }
  float inv[16];
  for (int h = 0; h < g->heads; h++) {
    float *sc = g->scores + (int64_t)h * tp;
    __m512 top = _mm512_set1_ps(-INFINITY);
    for (int i = 0; i < t; i += 16) {
      const __mmask16 in = t - i >= 16 ? 0xffff : (__mmask16)((1u << (t - i)) - 1);
      top = _mm512_max_ps(top, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), in, sc + i));
    }
    top = _mm512_set1_ps(_mm512_reduce_max_ps(top));
    __m512 sum = _mm512_setzero_ps();
    for (int i = 0; i < tp; i += 16) {
      const __mmask16 in = t - i >= 16 ? 0xffff : (__mmask16)((1u << (t - i)) - 1);
      const __m512 e = _mm512_maskz_mov_ps(in, exp16(_mm512_sub_ps(_mm512_loadu_ps(sc + i), top)));
      _mm512_storeu_ps(sc + i, e);
      sum = _mm512_add_ps(sum, e);
    }
    inv[h] = 1.f / _mm512_reduce_add_ps(sum);
  }
  // the values: per few heads (their sums in registers), each value row read once for them
  const int few = 16 / c;
  for (int h0 = 0; h0 < g->heads; h0 += few) {
    const int nh = g->heads - h0 < few ? g->heads - h0 : few;
    __m512 acc[16];
    for (int x = 0; x < 16; x++) acc[x] = _mm512_setzero_ps();
    for (int i = 0; i < t; i++) {
      const float *value = i < g->p ? g->past_v + (int64_t)i * d : g->new_v + (int64_t)(i - g->p) * d;
      __m512 v[8];
      for (int j = 0; j < c; j++) v[j] = _mm512_loadu_ps(value + 16 * j);
      for (int h = 0; h < nh; h++) {
        const __m512 w = _mm512_set1_ps(g->scores[(int64_t)(h0 + h) * tp + i]);
        for (int j = 0; j < c; j++) acc[h * c + j] = _mm512_fmadd_ps(w, v[j], acc[h * c + j]);
      }
    }
    for (int h = 0; h < nh; h++)
      for (int j = 0; j < c; j++) _mm512_storeu_ps(g->o + (int64_t)(h0 + h) * d + 16 * j, _mm512_mul_ps(acc[h * c + j], _mm512_set1_ps(inv[h0 + h])));
  }
}

AVX512_TARGET static void group_avx512_any(const Group *g) {
  switch (g->d) {
    case 64: group_avx512(g, 64); break;
    case 128: group_avx512(g, 128); break;
    default: group_avx512(g, g->d); break;
  }
}
// --- The same with AVX2 (8 lanes, 16 registers): keys 8 at a time, q and the keys read from the first cache as
// they are needed; the values for two heads at a time, 32 of their outputs at once. ---

// e^x for 8 floats: exp16's steps, 2^n put into the exponent (AVX2 has no vscalefps), so 0 below -87, where
// single precision has only denormals left (a softmax's terms there are nothing beside its largest, 1).
AVX2_TARGET static inline __m256 exp8(__m256 x) {
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 e = _mm256_set1_ps(1.f / 720);
  e = _mm256_fmadd_ps(e, r, _mm256_set1_ps(1.f / 120));
  e = _mm256_fmadd_ps(e, r, _mm256_set1_ps(1.f / 24));
  e = _mm256_fmadd_ps(e, r, _mm256_set1_ps(1.f / 6));
  e = _mm256_fmadd_ps(e, r, _mm256_set1_ps(0.5f));
  e = _mm256_fmadd_ps(e, r, _mm256_set1_ps(1.f));
  e = _mm256_fmadd_ps(e, r, _mm256_set1_ps(1.f));
  const __m256 clamped = _mm256_min_ps(_mm256_max_ps(n, _mm256_set1_ps(-127.f)), _mm256_set1_ps(127.f));
  const __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(clamped), _mm256_set1_epi32(127)), 23);
  // where x is far below (a masked key's score), e may be infinite or NaN: the mask clears it
  return _mm256_and_ps(_mm256_mul_ps(e, _mm256_castsi256_ps(two_n)), _mm256_cmp_ps(x, _mm256_set1_ps(-87.f), _CMP_GE_OQ));
}

// The 8 sums of a[0..7]'s lanes, in order, in one vector: pairs, then quads added within each 128-bit half,
// then the halves.
AVX2_TARGET static inline __m256 sums8(const __m256 *a) {
  const __m256 q0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 q1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(q0, q1, 0x20), _mm256_permute2f128_ps(q0, q1, 0x31));
}

// head_portable's steps for the query heads of one key/value head, d a multiple of 8 (a constant where inlined).
AVX2_TARGET static inline __attribute__((always_inline)) void group_avx2(const Group *g, const int d) {
  const int c = d / 8, t = g->t, tp = (t + 15) & ~15;
  const __m256 divisor = _mm256_set1_ps(g->divisor);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int i0 = 0; i0 < t; i0 += 8) {
    const int nk = t - i0 < 8 ? t - i0 : 8;
    const float *key[8];
    for (int k = 0; k < 8; k++) {
      const int i = i0 + (k < nk ? k : 0);
      key[k] = i < g->p ? g->past_k + (int64_t)i * d : g->new_k + (int64_t)(i - g->p) * d;
    }
    const __m256i in = _mm256_cmpgt_epi32(_mm256_set1_epi32(nk), lane);
    const __m256 mask = _mm256_maskload_ps(g->mask + i0, in);
    for (int h = 0; h < g->heads; h++) {
      const float *q = g->q + (int64_t)h * d;
      __m256 acc[8];
      for (int k = 0; k < 8; k++) {
        acc[k] = _mm256_mul_ps(_mm256_loadu_ps(q), _mm256_loadu_ps(key[k]));
        for (int j = 1; j < c; j++) acc[k] = _mm256_fmadd_ps(_mm256_loadu_ps(q + 8 * j), _mm256_loadu_ps(key[k] + 8 * j), acc[k]);
      }
      // scores past t (a tail's repeated key) go into the padding, never read
      _mm256_storeu_ps(g->scores + (int64_t)h * tp + i0, _mm256_add_ps(_mm256_div_ps(sums8(acc), divisor), mask));
    }
  }
  float inv[16];
  for (int h = 0; h < g->heads; h++) {
    float *sc = g->scores + (int64_t)h * tp;
    __m256 top = _mm256_set1_ps(-INFINITY);
    for (int i = 0; i < t; i += 8) {
      const __m256 in = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(t - i), lane));
      top = _mm256_max_ps(top, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_loadu_ps(sc + i), in));
    }
    top = _mm256_set1_ps(max8(top));
    __m256 sum = _mm256_setzero_ps();
    for (int i = 0; i < tp; i += 8) {
      const __m256 in = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(t - i), lane));
      const __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(_mm256_loadu_ps(sc + i), top)), in);
      _mm256_storeu_ps(sc + i, e);
      sum = _mm256_add_ps(sum, e);
    }
    inv[h] = 1.f / sum8(sum);
  }
  // the values: two heads at a time, 4 vectors (32 outputs) of each at once, each value row read once for both
  for (int h0 = 0; h0 < g->heads; h0 += 2) {
    const int two = g->heads - h0 > 1;
    const float *s0 = g->scores + (int64_t)h0 * tp, *s1 = two ? s0 + tp : s0;
    for (int j0 = 0; j0 < c; j0 += 4) {
      const int cj = c - j0 < 4 ? c - j0 : 4;
      __m256 a0[4], a1[4];
      for (int j = 0; j < 4; j++) a0[j] = a1[j] = _mm256_setzero_ps();
      for (int i = 0; i < t; i++) {
        const float *value = (i < g->p ? g->past_v + (int64_t)i * d : g->new_v + (int64_t)(i - g->p) * d) + 8 * j0;
        const __m256 w0 = _mm256_set1_ps(s0[i]), w1 = _mm256_set1_ps(s1[i]);
        for (int j = 0; j < cj; j++) {
          const __m256 v = _mm256_loadu_ps(value + 8 * j);
          a0[j] = _mm256_fmadd_ps(w0, v, a0[j]);
          a1[j] = _mm256_fmadd_ps(w1, v, a1[j]);
        }
      }
      for (int j = 0; j < cj; j++) {
        _mm256_storeu_ps(g->o + (int64_t)h0 * d + 8 * (j0 + j), _mm256_mul_ps(a0[j], _mm256_set1_ps(inv[h0])));
        if (two) _mm256_storeu_ps(g->o + (int64_t)(h0 + 1) * d + 8 * (j0 + j), _mm256_mul_ps(a1[j], _mm256_set1_ps(inv[h0 + 1])));
      }
    }
  }
}

AVX2_TARGET static void group_avx2_any(const Group *g) {
  switch (g->d) {
    case 64: group_avx2(g, 64); break;
    case 128: group_avx2(g, 128); break;
    default: group_avx2(g, g->d); break;
  }
}
#endif

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

// e^x for 4 floats, exp16's steps without fused multiply-adds; 2^n put into the exponent, so 0 below -87 (where
// single precision has only denormals left; a softmax's terms there are nothing beside its largest, 1).
static inline v128_t exp4(v128_t x) {
  const v128_t n = wasm_f32x4_nearest(wasm_f32x4_mul(x, wasm_f32x4_splat(1.44269504088896341f)));
  v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));
  r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
  v128_t e = wasm_f32x4_splat(1.f / 720);
  static const float c[6] = {1.f / 120, 1.f / 24, 1.f / 6, 0.5f, 1.f, 1.f};
  for (int i = 0; i < 6; i++) e = wasm_f32x4_add(wasm_f32x4_mul(e, r), wasm_f32x4_splat(c[i]));
  const v128_t live = wasm_f32x4_ge(x, wasm_f32x4_splat(-87.f));
  const v128_t n_ = wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_min(n, wasm_f32x4_splat(127.f)));
  const v128_t two_n = wasm_i32x4_shl(wasm_i32x4_add(n_, wasm_i32x4_splat(127)), 23);
  return wasm_v128_and(wasm_f32x4_mul(e, two_n), live);
}

// Lane j: the sum of a[j]'s four lanes.
static inline v128_t sums4(const v128_t *a) {
  const v128_t t0 = wasm_f32x4_add(wasm_i32x4_shuffle(a[0], a[1], 0, 4, 1, 5), wasm_i32x4_shuffle(a[0], a[1], 2, 6, 3, 7));
  const v128_t t1 = wasm_f32x4_add(wasm_i32x4_shuffle(a[2], a[3], 0, 4, 1, 5), wasm_i32x4_shuffle(a[2], a[3], 2, 6, 3, 7));
  return wasm_f32x4_add(wasm_i32x4_shuffle(t0, t1, 0, 1, 4, 5), wasm_i32x4_shuffle(t0, t1, 2, 3, 6, 7));
}

// A mask value this low hides its key: a score (of magnitude below 1e22) added to it rounds to the mask's value
// itself, so the score need not be computed.
#define MASKED -1e30f

// The group's heads with 128-bit vectors, d a multiple of 4 up to 128: scores 4 keys at a time, each key's dot
// product in 4 lanes added across at the end; softmax with exp4; each head's output in registers.
static void group_wasm(const Group *g) {
  const int d = g->d, c = d / 4, t = g->t, tp = (t + 15) & ~15;
  const v128_t divisor = wasm_f32x4_splat(g->divisor);
  for (int i0 = 0; i0 < t; i0 += 4) {
    const int nk = t - i0 < 4 ? t - i0 : 4;
    const float *key[4];
    for (int k = 0; k < 4; k++) {
      const int i = i0 + (k < nk ? k : 0);
      key[k] = i < g->p ? g->past_k + (int64_t)i * d : g->new_k + (int64_t)(i - g->p) * d;
    }
    float m[4] = {0, 0, 0, 0};
    int masked = 0;
    for (int k = 0; k < nk; k++) m[k] = g->mask[i0 + k], masked += m[k] <= MASKED;
    const v128_t mask = wasm_v128_load(m);
    if (masked == nk) {
      // keys a causal mask hides (a prompt's later positions): each score would round to the mask's value
      for (int h = 0; h < g->heads; h++) wasm_v128_store(g->scores + (int64_t)h * tp + i0, mask);
      continue;
    }
    for (int h = 0; h < g->heads; h++) {
      const float *q = g->q + (int64_t)h * d;
      v128_t acc[4];
      for (int k = 0; k < 4; k++) acc[k] = wasm_f32x4_mul(wasm_v128_load(q), wasm_v128_load(key[k]));
      for (int j = 1; j < c; j++) {
        const v128_t qj = wasm_v128_load(q + 4 * j);
        for (int k = 0; k < 4; k++) acc[k] = wasm_f32x4_add(acc[k], wasm_f32x4_mul(qj, wasm_v128_load(key[k] + 4 * j)));
      }
      // scores past t (a tail's repeated key) are written into the padding, never read
      wasm_v128_store(g->scores + (int64_t)h * tp + i0, wasm_f32x4_add(wasm_f32x4_div(sums4(acc), divisor), mask));
    }
  }
  for (int h = 0; h < g->heads; h++) {
    float *sc = g->scores + (int64_t)h * tp;
    float top = -INFINITY;
    for (int i = 0; i < t; i++) top = sc[i] > top ? sc[i] : top;
    const v128_t tv = wasm_f32x4_splat(top);
    v128_t sum = wasm_f32x4_splat(0.f);
    int i = 0;
    for (; i + 4 <= t; i += 4) {
      const v128_t e = exp4(wasm_f32x4_sub(wasm_v128_load(sc + i), tv));
      wasm_v128_store(sc + i, e);
      sum = wasm_f32x4_add(sum, e);
    }
    float total = wasm_f32x4_extract_lane(sum, 0) + wasm_f32x4_extract_lane(sum, 1) + wasm_f32x4_extract_lane(sum, 2) +
                  wasm_f32x4_extract_lane(sum, 3);
    if (i < t) {
      const v128_t e = exp4(wasm_f32x4_sub(wasm_v128_load(sc + i), tv));
      float l[4];
      wasm_v128_store(l, e);
      for (; i < t; i++) total += sc[i] = l[i & 3];
    }
    const v128_t inv = wasm_f32x4_splat(1.f / total);
    // 32 values of the output at a time: their sums stay in registers (the engine has 16 of them)
    for (int j0 = 0; j0 < c; j0 += 8) {
      const int cj = c - j0 < 8 ? c - j0 : 8;
      v128_t acc[8];
      for (int j = 0; j < cj; j++) acc[j] = wasm_f32x4_splat(0.f);
      for (int k = 0; k < t; k++) {
        if (sc[k] == 0.f) continue; // e^x gave nothing: a masked key
        const float *value = (k < g->p ? g->past_v + (int64_t)k * d : g->new_v + (int64_t)(k - g->p) * d) + 4 * j0;
        const v128_t w = wasm_f32x4_splat(sc[k]);
        for (int j = 0; j < cj; j++) acc[j] = wasm_f32x4_add(acc[j], wasm_f32x4_mul(w, wasm_v128_load(value + 4 * j)));
      }
      for (int j = 0; j < cj; j++) wasm_v128_store(g->o + (int64_t)h * d + 4 * (j0 + j), wasm_f32x4_mul(acc[j], inv));
    }
  }
}
#endif

int svc_attention_prepare(const Attention *a) {
  const int b = a->b, s = a->s, d = a->head_size, half = d / 2, kw = a->kv_heads * d;
  for (int64_t i = 0; i < (int64_t)b * s; i++)
    if (a->pos[i] < 0 || a->pos[i] >= a->rope_rows) return -1;
  // the new keys rotated and the new values, in the caches' layout [b][kv_heads][s][d]
  for (int r = 0; r < b; r++)
    for (int j = 0; j < s; j++) {
      const int64_t row = a->pos[(int64_t)r * s + j];
      const float *c = a->cos + row * half, *sn = a->sin + row * half;
      for (int kv = 0; kv < a->kv_heads; kv++) {
        const int64_t src = ((int64_t)r * s + j) * kw + (int64_t)kv * d, dst = (((int64_t)r * a->kv_heads + kv) * s + j) * d;
        rotate(a->k + src, c, sn, d, a->new_k + dst);
        memcpy(a->new_v + dst, a->v + src, sizeof(float) * (size_t)d);
      }
    }
  return 0;
}

size_t svc_attention_scratch(const Attention *a) {
  const int t = a->p + a->s, tp = (t + 15) & ~15, group = a->heads / a->kv_heads;
  return (size_t)group * tp + (size_t)group * a->head_size + (size_t)tp;
}

// A mask value at or below this hides its position: its weight, e^(score + mask - max), is 0 in single precision
// while any position is visible and scores differ by less than ~1e9 (exporters write the lowest float,
// -infinity or -1e9). Hidden cached positions are left out rather than weighed 0: a row then sums exactly the
// positions it would alone, whatever the padding and spare capacity of the batch it decodes in.
#define HIDDEN (-1e9f)

// The cached positions [*first, *last) a query can see, where its mask (p cached, then s new) hides those before
// (a row's left padding) and after (the cache's capacity past a row's length); all p where it hides every one.
static void visible(const float *mask, int p, int s, int *first, int *last) {
  int f = 0, l = p;
  while (f < p && mask[f] <= HIDDEN) f++;
  while (l > f && mask[l - 1] <= HIDDEN) l--;
  int seen = f < l;
  for (int j = 0; j < s && !seen; j++) seen = mask[p + j] > HIDDEN;
  *first = seen ? f : 0, *last = seen ? l : p;
}

int svc_attention_unit(const Attention *a, int simd, int unit, float *scratch) {
#if defined(__x86_64__)
  const int small = a->heads / a->kv_heads <= 16;
  const int avx512 = simd == ATTENTION_AVX512 && small && a->head_size % 16 == 0 && a->head_size <= 128;
  const int avx2 = simd >= ATTENTION_AVX2 && !avx512 && small && a->head_size % 8 == 0;
#else
  (void)simd;
#endif
  const int s = a->s, d = a->head_size, half = d / 2, tp = (a->p + s + 15) & ~15;
  const int group = a->heads / a->kv_heads, qw = a->heads * d;
  const int kv = unit % a->kv_heads, rj = unit / a->kv_heads, r = rj / s; // rj: row r's position rj % s
  // scores of the group's heads (rows padded to 16 for the vector tail), then its rotated queries
  float *scores = scratch ? scratch : malloc(sizeof(float) * svc_attention_scratch(a));
  if (!scores) return -2;
  float *q = scores + (size_t)group * tp;
  const int64_t row = a->pos[rj];
  const float *c = a->cos + row * half, *sn = a->sin + row * half;
  const int64_t at = (int64_t)r * a->kv_heads + kv;
  for (int h = 0; h < group; h++) rotate(a->q + (int64_t)rj * qw + (int64_t)(kv * group + h) * d, c, sn, d, q + (int64_t)h * d);
  // hidden cached positions are left out (their weights are 0): the others' mask, then the new positions'
  const float *full = a->mask + (int64_t)rj * (a->p + s);
  int first, last;
  visible(full, a->p, s, &first, &last);
  const int p = last - first, t = p + s;
  float *mask = q + (int64_t)group * d;
  memcpy(mask, full + first, sizeof(float) * (size_t)p);
  memcpy(mask + p, full + a->p, sizeof(float) * (size_t)s);
  const int64_t past = (at * a->p + first) * d;
  const float *pk = a->past_k + past, *nk = a->new_k + at * s * d, *pv = a->past_v + past, *nv = a->new_v + at * s * d;
  float *o = a->out + (int64_t)rj * qw + (int64_t)kv * group * d;
#if defined(__x86_64__)
  if (avx512 || avx2) {
    const Group g = {q, group, pk, nk, pv, nv, mask, p, t, d, a->divisor, scores, o};
    if (avx512) group_avx512_any(&g);
    else group_avx2_any(&g);
    if (!scratch) free(scores);
    return 0;
  }
#elif defined(__wasm_simd128__)
  if (d % 4 == 0 && d <= 128) {
    const Group g = {q, group, pk, nk, pv, nv, mask, p, t, d, a->divisor, scores, o};
    group_wasm(&g);
    if (!scratch) free(scores);
    return 0;
  }
#endif
  for (int h = 0; h < group; h++) {
    const Head one = {
      .q = q + (int64_t)h * d, .past_k = pk, .new_k = nk, .past_v = pv, .new_v = nv, .mask = mask, .p = p, .t = t, .d = d,
      .divisor = a->divisor, .scores = scores, .o = o + (int64_t)h * d,
    };
    head_portable(&one);
  }
  if (!scratch) free(scores);
  return 0;
}

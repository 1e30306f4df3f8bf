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

// head_portable's steps with d (a multiple of 16, at most 128) kept in registers: the query for the scores, the
// sum for the values. Inlined with d a constant where it is one.
AVX512_TARGET static inline __attribute__((always_inline)) void head_avx512(const Head *h, const int d) {
  const int c = d / 16;
  __m512 q[8], acc[8];
  for (int j = 0; j < c; j++) q[j] = _mm512_loadu_ps(h->q + 16 * j), acc[j] = _mm512_setzero_ps();
  float max = -INFINITY;
  for (int i = 0; i < h->t; i++) {
    const float *key = i < h->p ? h->past_k + (int64_t)i * d : h->new_k + (int64_t)(i - h->p) * d;
    __m512 s = _mm512_mul_ps(q[0], _mm512_loadu_ps(key));
    for (int j = 1; j < c; j++) s = _mm512_fmadd_ps(q[j], _mm512_loadu_ps(key + 16 * j), s);
    const float x = _mm512_reduce_add_ps(s) / h->divisor + h->mask[i];
    h->scores[i] = x;
    if (x > max) max = x;
  }
  const __m512 top = _mm512_set1_ps(max);
  __m512 sum = _mm512_setzero_ps();
  for (int i = 0; i < h->t; i += 16) {
    const __mmask16 in = h->t - i >= 16 ? 0xffff : (__mmask16)((1u << (h->t - i)) - 1);
    const __m512 e = _mm512_maskz_mov_ps(in, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(in, h->scores + i), top)));
    _mm512_mask_storeu_ps(h->scores + i, in, e);
    sum = _mm512_add_ps(sum, e);
  }
  for (int i = 0; i < h->t; i++) {
    const float *value = i < h->p ? h->past_v + (int64_t)i * d : h->new_v + (int64_t)(i - h->p) * d;
    const __m512 w = _mm512_set1_ps(h->scores[i]);
    for (int j = 0; j < c; j++) acc[j] = _mm512_fmadd_ps(w, _mm512_loadu_ps(value + 16 * j), acc[j]);
  }
  const __m512 inv = _mm512_set1_ps(1.f / _mm512_reduce_add_ps(sum));
  for (int j = 0; j < c; j++) _mm512_storeu_ps(h->o + 16 * j, _mm512_mul_ps(acc[j], inv));
}

AVX512_TARGET static void head_avx512_any(const Head *h) {
  switch (h->d) {
    case 64: head_avx512(h, 64); break;
    case 128: head_avx512(h, 128); break;
    default: head_avx512(h, h->d); break;
  }
}
#endif

int svc_attention(const Attention *a, int avx512) {
  void (*head)(const Head *) = head_portable;
#if defined(__x86_64__)
  if (avx512 && a->head_size % 16 == 0 && a->head_size <= 128) head = head_avx512_any;
#else
  (void)avx512;
#endif
  const int b = a->b, s = a->s, p = a->p, d = a->head_size, half = d / 2, t = p + s;
  const int group = a->heads / a->kv_heads, qw = a->heads * d, kw = a->kv_heads * d;
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
  // scores padded to 16 for the vector tail; the rotated query after them
  float *scores = malloc(sizeof(float) * ((size_t)t + 16 + (size_t)d));
  if (!scores) return -2;
  float *q = scores + t + 16;
  for (int r = 0; r < b; r++)
    for (int j = 0; j < s; j++) {
      const int64_t row = a->pos[(int64_t)r * s + j];
      const float *c = a->cos + row * half, *sn = a->sin + row * half;
      for (int h = 0; h < a->heads; h++) {
        const int64_t kv = (int64_t)r * a->kv_heads + h / group;
        rotate(a->q + ((int64_t)r * s + j) * qw + (int64_t)h * d, c, sn, d, q);
        const Head one = {
          .q = q, .past_k = a->past_k + kv * p * d, .new_k = a->new_k + kv * s * d, .past_v = a->past_v + kv * p * d,
          .new_v = a->new_v + kv * s * d, .mask = a->mask + ((int64_t)r * s + j) * t, .p = p, .t = t, .d = d,
          .divisor = a->divisor, .scores = scores, .o = a->out + ((int64_t)r * s + j) * qw + (int64_t)h * d,
        };
        head(&one);
      }
    }
  free(scores);
  return 0;
}

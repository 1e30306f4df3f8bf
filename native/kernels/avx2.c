// The products' AVX2 path, for x64 without AVX-512 VNNI (AMD Zen 2 and 3, Intel before Ice Lake): the plain-C
// kernels' integer sums and float steps (kernels.c), in the same order, with 256-bit vectors, so that its outputs
// are theirs. AVX2's byte product (vpmaddubsw: unsigned by signed bytes, pairs added into 16 bits with
// saturation) is exact only while a pair's sum fits in 16 bits. 4-bit codes (0..15) times activations in
// [-127, 127] fit, and so do eight such pairs added (30,480 at most). 8-bit activations (0..255) times weights
// (-128..127) do not (65,280: where ONNX Runtime's own AVX2 kernel saturates), so both are widened to 16 bits
// and multiplied with vpmaddwd, which adds its pairs into 32 bits.
#if defined(__x86_64__)

#include "logistic.h"
#include "products.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

int svc_has_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

// Four bytes in every 32-bit lane, broadcast from memory (a load, not a transfer from a general register).
AVX2_TARGET static inline __attribute__((always_inline)) __m256i broadcast4(const void *p) {
  return _mm256_castps_si256(_mm256_broadcast_ss((const float *)p));
}

// The first n floats at y (all 8 where n >= 8, none where n <= 0), the rest zeros; and the way back.
AVX2_TARGET static inline __m256 load_first(const float *y, int n) {
  if (n >= 8) return _mm256_loadu_ps(y);
  float t[8] = {0};
  if (n > 0) memcpy(t, y, (size_t)n * sizeof(float));
  return _mm256_loadu_ps(t);
}

AVX2_TARGET static inline void store_first(float *y, __m256 v, int n) {
  if (n >= 8) return _mm256_storeu_ps(y, v);
  float t[8];
  _mm256_storeu_ps(t, v);
  if (n > 0) memcpy(y, t, (size_t)n * sizeof(float));
}

// A lane mask for the first n (0..8) of 8 floats.
AVX2_TARGET static inline __m256i first_lanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

AVX2_TARGET static inline float max8(__m256 v) {
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}

AVX2_TARGET static inline float min8(__m256 v) {
  __m128 h = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_min_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_min_ss(h, _mm_movehdup_ps(h)));
}

// --- 4 bits (kernels.c, group_portable): sa * sum(code * q) - c per block, times the block's scale, added up ---

// rows and half are constants in each caller (svc_group_avx2), so the accumulators stay in registers. A group's
// 16 columns are two vectors of 8 (h): bytes 32h..32h+31 of each 64-byte step.
AVX2_TARGET static inline __attribute__((always_inline)) void group_rows(const Job *job, int g, int r0, const int rows, int b0, int b1,
                                                                         const int half) {
  const Packed *w = job->w;
  const int nb = w->nb;
  const uint8_t *p = w->packed + ((size_t)g * nb + b0) * 256;
  const float *sw = half ? NULL : w->sw + (size_t)g * 16 * nb;
  const uint16_t *sh = half ? w->sh + (size_t)g * 16 * nb : NULL;
  const __m256i mask = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
  const int n0 = g * 16, cols = w->n - n0 < 16 ? w->n - n0 : 16;
  __m256 acc[4][2];
  for (int r = 0; r < rows; r++)
    for (int h = 0; h < 2; h++)
      acc[r][h] = b0 > 0 ? load_first(job->y + (size_t)(r0 + r) * w->n + n0 + 8 * h, cols - 8 * h) : _mm256_setzero_ps();
  for (int b = b0; b < b1; b++, p += 256) {
    // 24 blocks (6 KB) ahead, as the AVX-512 kernel: the weights stream from memory once
    _mm_prefetch((const char *)(p + 6144), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 6208), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 6272), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 6336), _MM_HINT_T0);
    _mm_prefetch(half ? (const char *)(sh + ((size_t)b + 24) * 16) : (const char *)(sw + ((size_t)b + 24) * 16), _MM_HINT_T0);
    for (int h = 0; h < 2; h++) {
      __m256i lo[4], hi[4];
      for (int s = 0; s < 4; s++) {
        const __m256i v = _mm256_load_si256((const __m256i *)(p + 64 * s + 32 * h));
        lo[s] = _mm256_and_si256(v, mask);
        hi[s] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
      }
      const __m256 scale = half ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(sh + (size_t)b * 16 + 8 * h)))
                                : _mm256_loadu_ps(sw + (size_t)b * 16 + 8 * h);
      for (int r = 0; r < rows; r++) {
        const int8_t *a = job->q + (size_t)(r0 + r) * w->k + (size_t)b * 32;
        __m256i s16 = _mm256_maddubs_epi16(lo[0], broadcast4(a));
        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lo[1], broadcast4(a + 4)));
        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lo[2], broadcast4(a + 8)));
        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(lo[3], broadcast4(a + 12)));
        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(hi[0], broadcast4(a + 16)));
        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(hi[1], broadcast4(a + 20)));
        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(hi[2], broadcast4(a + 24)));
        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(hi[3], broadcast4(a + 28)));
        const __m256i s = _mm256_madd_epi16(s16, ones); // column j's four 16-bit pairs of lane j, into 32 bits
        const size_t i = (size_t)(r0 + r) * nb + b;
        const __m256 t = _mm256_fmsub_ps(_mm256_set1_ps(job->sa[i]), _mm256_cvtepi32_ps(s), _mm256_set1_ps(job->c[i]));
        acc[r][h] = _mm256_fmadd_ps(scale, t, acc[r][h]);
      }
    }
  }
  for (int r = 0; r < rows; r++)
    for (int h = 0; h < 2; h++) store_first(job->y + (size_t)(r0 + r) * w->n + n0 + 8 * h, acc[r][h], cols - 8 * h);
}

AVX2_TARGET void svc_group_avx2(const void *arg, int g, int r0, int rows, int b0, int b1) {
  const Job *job = arg;
  if (job->w->sh) switch (rows) {
      case 4: group_rows(job, g, r0, 4, b0, b1, 1); break;
      case 3: group_rows(job, g, r0, 3, b0, b1, 1); break;
      case 2: group_rows(job, g, r0, 2, b0, b1, 1); break;
      default: group_rows(job, g, r0, 1, b0, b1, 1); break;
    }
  else switch (rows) {
      case 4: group_rows(job, g, r0, 4, b0, b1, 0); break;
      case 3: group_rows(job, g, r0, 3, b0, b1, 0); break;
      case 2: group_rows(job, g, r0, 2, b0, b1, 0); break;
      default: group_rows(job, g, r0, 1, b0, b1, 0); break;
    }
}

// kernels.c's quant_row with AVX2, the same steps: amax, 127 / amax in one step, each product rounded to float
// and then to the nearest integer, ties to even (CVTPS2DQ in the default rounding mode, as lrintf).
AVX2_TARGET void svc_quant_row_avx2(const float *x, int k, int8_t *q, float *sa, float *c) {
  const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int b = 0; b < k / 32; b++) {
    const float *xb = x + (size_t)b * 32;
    __m256 v[4];
    for (int i = 0; i < 4; i++) v[i] = _mm256_loadu_ps(xb + 8 * i);
    const float amax = max8(_mm256_max_ps(_mm256_max_ps(_mm256_and_ps(v[0], abs), _mm256_and_ps(v[1], abs)),
                                          _mm256_max_ps(_mm256_and_ps(v[2], abs), _mm256_and_ps(v[3], abs))));
    const float s = amax / 127.f, inv = amax != 0.f ? 127.f / amax : 0.f;
    const __m256 iv = _mm256_set1_ps(inv);
    __m256i n[4];
    for (int i = 0; i < 4; i++) n[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], iv));
    // the packs interleave 128-bit halves: 4-byte pieces come out as n0 n1 n2 n3 (low halves), then the high ones
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
    _mm256_storeu_si256((__m256i *)(q + (size_t)b * 32), _mm256_permutevar8x32_epi32(bytes, order));
    const __m256i sum8 = _mm256_add_epi32(_mm256_add_epi32(n[0], n[1]), _mm256_add_epi32(n[2], n[3]));
    __m128i sum4 = _mm_add_epi32(_mm256_castsi256_si128(sum8), _mm256_extracti128_si256(sum8, 1));
    sum4 = _mm_add_epi32(sum4, _mm_shuffle_epi32(sum4, _MM_SHUFFLE(1, 0, 3, 2)));
    sum4 = _mm_add_epi32(sum4, _mm_shuffle_epi32(sum4, _MM_SHUFFLE(2, 3, 0, 1)));
    sa[b] = s;
    c[b] = 8.f * s * (float)_mm_cvtsi128_si32(sum4);
  }
}

// --- 8 bits (kernels.c, group8_portable): float(sum q (W - w_zp) - zp * wsum) * (sa * sw) ---

// Two rows at most (rows is a constant in each caller): four accumulators a row. A step's 16 weights of 4
// columns widened to 16 bits sit in one vector, so each 32-bit lane of vpmaddwd's result holds half a column's
// step (lanes 2j and 2j + 1: column j of the four); the halves are added at the end (vphaddd).
AVX2_TARGET static inline __attribute__((always_inline)) void group8_rows(const Job8 *job, int g, int r0, const int rows) {
  const Packed8 *w = job->w;
  const int steps = w->kp / 4;
  const int8_t *p = w->packed + (size_t)g * steps * 64;
  const uint8_t *a[2];
  for (int r = 0; r < rows; r++) a[r] = job->q + (size_t)(r0 + r) * w->kp;
  __m256i acc[2][4];
  for (int r = 0; r < rows; r++)
    for (int i = 0; i < 4; i++) acc[r][i] = _mm256_setzero_si256();
  for (int s = 0; s < steps; s++, p += 64) {
    _mm_prefetch((const char *)(p + 6144), _MM_HINT_T0); // 6 KB ahead, as the AVX-512 kernel
    __m256i wv[4];
    for (int i = 0; i < 4; i++) wv[i] = _mm256_cvtepi8_epi16(_mm_load_si128((const __m128i *)(p + 16 * i)));
    for (int r = 0; r < rows; r++) {
      // the step's 4 activations, widened, four times over
      const __m256i v = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(broadcast4(a[r] + (size_t)s * 4)));
      for (int i = 0; i < 4; i++) acc[r][i] = _mm256_add_epi32(acc[r][i], _mm256_madd_epi16(wv[i], v));
    }
  }
  const int n0 = g * 16, cols = w->n - n0 < 16 ? w->n - n0 : 16;
  const __m256i zp = _mm256_set1_epi32(job->zp);
  const __m256 sa = _mm256_set1_ps(job->sa);
  for (int r = 0; r < rows; r++)
    for (int h = 0; h < 2; h++) {
      // vphaddd gives columns 0 1 4 5 | 2 3 6 7 of its two vectors: the 64-bit pieces reordered 0 2 1 3
      const __m256i sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][2 * h], acc[r][2 * h + 1]), _MM_SHUFFLE(3, 1, 2, 0));
      const __m256i corr = _mm256_mullo_epi32(_mm256_loadu_si256((const __m256i *)(w->wsum + n0 + 8 * h)), zp);
      const __m256 mult = _mm256_mul_ps(sa, _mm256_loadu_ps(w->sw + n0 + 8 * h));
      const __m256 y = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sums, corr)), mult);
      store_first(job->y + (size_t)(r0 + r) * w->n + n0 + 8 * h, y, cols - 8 * h);
    }
}

AVX2_TARGET void svc_group8_avx2(const void *arg, int g, int r0, int rows, int b0, int b1) {
  (void)b0, (void)b1; // always the whole of k (run_job's seg 0)
  const Job8 *job = arg;
  for (; rows >= 2; rows -= 2, r0 += 2) group8_rows(job, g, r0, 2);
  if (rows) group8_rows(job, g, r0, 1);
}

// kernels.c's quant8 with AVX2, the same results: MINPS/MAXPS keep their second operand (the running value) where
// x is NaN, as quant8's comparisons do; the same division, clamps and rounding.
AVX2_TARGET void svc_quant8_avx2(const float *x, int64_t m, int k, int kp, uint8_t *q, float *scale, int32_t *zp) {
  __m256 lov = _mm256_setzero_ps(), hiv = _mm256_setzero_ps();
  const int64_t total = m * k;
  int64_t i = 0;
  for (; i + 8 <= total; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    lov = _mm256_min_ps(v, lov);
    hiv = _mm256_max_ps(v, hiv);
  }
  float lo = min8(lov), hi = max8(hiv);
  for (; i < total; i++) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
  svc_quant8_params(lo, hi, scale, zp);
  const float sf = *scale;
  const int z = *zp;
  const __m256 s = _mm256_set1_ps(sf), qlo = _mm256_set1_ps((float)-z), qhi = _mm256_set1_ps((float)(255 - z));
  const __m256i zv = _mm256_set1_epi32(z);
  for (int64_t r = 0; r < m; r++) {
    const float *xr = x + r * k;
    uint8_t *qr = q + r * kp;
    int j = 0;
    for (; j + 8 <= k; j += 8) {
      __m256 v = _mm256_div_ps(_mm256_loadu_ps(xr + j), s);
      v = _mm256_min_ps(_mm256_max_ps(v, qlo), qhi);
      const __m256i n = _mm256_add_epi32(_mm256_cvtps_epi32(v), zv); // 0..255
      const __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(n), _mm256_extracti128_si256(n, 1));
      _mm_storel_epi64((__m128i *)(qr + j), _mm_packus_epi16(w16, w16));
    }
    for (; j < k; j++) {
      float v = xr[j] / sf;
      v = v > (float)-z ? v : (float)-z;
      v = v < (float)(255 - z) ? v : (float)(255 - z);
      qr[j] = (uint8_t)(lrintf(v) + z);
    }
    for (; j < kp; j++) qr[j] = 0;
  }
}

// kernels.c's silu_mul_portable with AVX2: the same clamps (a NaN passes through), polynomials by fused
// multiply-adds, one division, + 0.5, the lower clamp, and the two products.
AVX2_TARGET void svc_silu_mul_avx2(float *g, const float *u, int cols) {
  for (int j = 0; j < cols; j += 8) {
    const __m256i k = first_lanes(cols - j < 8 ? cols - j : 8);
    const __m256 g0 = _mm256_maskload_ps(g + j, k), uv = _mm256_maskload_ps(u + j, k);
    const __m256 x = _mm256_min_ps(_mm256_set1_ps(LOGISTIC_HI), _mm256_max_ps(_mm256_set1_ps(LOGISTIC_LO), g0));
    const __m256 x2 = _mm256_mul_ps(x, x);
    __m256 p = _mm256_fmadd_ps(x2, _mm256_set1_ps(ALPHA_9), _mm256_set1_ps(ALPHA_7));
    p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(ALPHA_5));
    p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(ALPHA_3));
    p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(ALPHA_1));
    p = _mm256_mul_ps(x, p);
    __m256 q = _mm256_fmadd_ps(x2, _mm256_set1_ps(BETA_10), _mm256_set1_ps(BETA_8));
    q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(BETA_6));
    q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(BETA_4));
    q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(BETA_2));
    q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(BETA_0));
    const __m256 s = _mm256_max_ps(_mm256_setzero_ps(), _mm256_add_ps(_mm256_div_ps(p, q), _mm256_set1_ps(0.5f)));
    _mm256_maskstore_ps(g + j, k, _mm256_mul_ps(_mm256_mul_ps(g0, s), uv));
  }
}

#endif

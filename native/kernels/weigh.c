// A sampler's weights, as src/services/inference/sampling.ts's `weighEach` computes them in the script, bit for
// bit: the same double-precision steps in the same order. So no step may be fused into a multiply-add (C
// compilers may fuse a * b + c where the CPU has one; a script's numbers never are), and the table of
// 2^(j/256) comes from the script (its Math.pow and the C library's may differ in the last bit).
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "weigh.h"

// 2^e for -1022 <= e <= 0, exactly: its exponent bits.
static inline double pow2(int e) {
  union {
    uint64_t u;
    double d;
  } b = {.u = (uint64_t)(1023 + e) << 52};
  return b.d;
}

// floor(y) for |y| < 2^52, without a library call (x64's baseline has no rounding instruction).
static inline double floor_of(double y) {
  const double t = (double)(int64_t)y;
  return t > y ? t - 1 : t;
}

// sampling.ts's expNeg: e^x for x near or above -40, as 2^(k/256) · e^f, |f| <= ln 2 / 512.
static inline double exp_neg(double x, const double *frac) {
  const double y = x * (256 * 1.4426950408889634); // 256 · Math.LOG2E (exact: a power of two apart)
  const double k = floor_of(y + 0.5);
  const double f = (y - k) * (0.6931471805599453 / 256); // Math.LN2 / 256
  const int ki = (int)k, e = ki >> 8;
  return -e < 64 ? (1 + f * (1 + f * (0.5 + f * (1.0 / 6)))) * frac[ki & 255] * pow2(e) : 0;
}

// The weights (the first pass) from i on.
static void weights_plain(const float *data, int64_t i, int64_t n, double max, double floor_, double inv, const double *frac, double *w) {
  for (; i < n; i++) {
    const double v = data[i];
    w[i] = v >= floor_ ? exp_neg((v - max) * inv, frac) : 0;
  }
}

#if defined(__x86_64__)
#include <immintrin.h>

// weights_plain 4 values at a time: each lane the same steps (no multiply-add), the table read by a gather and 2^e
// made from its exponent bits.
__attribute__((target("avx2"))) static void weights_avx2(const float *data, int64_t n, double max, double floor_, double inv,
                                                         const double *frac, double *w) {
  const __m256d vmax = _mm256_set1_pd(max), vfloor = _mm256_set1_pd(floor_), vinv = _mm256_set1_pd(inv);
  const __m256d c256 = _mm256_set1_pd(256 * 1.4426950408889634), ln2 = _mm256_set1_pd(0.6931471805599453 / 256);
  const __m256d half = _mm256_set1_pd(0.5), one = _mm256_set1_pd(1), sixth = _mm256_set1_pd(1.0 / 6);
  const __m128i low8 = _mm_set1_epi32(255), below = _mm_set1_epi32(-64), bias = _mm_set1_epi32(1023);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(data + i));
    const __m256d y = _mm256_mul_pd(_mm256_mul_pd(_mm256_sub_pd(v, vmax), vinv), c256);
    const __m256d k = _mm256_round_pd(_mm256_add_pd(y, half), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m256d f = _mm256_mul_pd(_mm256_sub_pd(y, k), ln2);
    const __m128i ki = _mm256_cvttpd_epi32(k), e = _mm_srai_epi32(ki, 8);
    const __m256d table = _mm256_i32gather_pd(frac, _mm_and_si128(ki, low8), 8);
    const __m256d scale = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_cvtepi32_epi64(_mm_add_epi32(e, bias)), 52));
    __m256d p = _mm256_add_pd(half, _mm256_mul_pd(f, sixth));
    p = _mm256_add_pd(one, _mm256_mul_pd(f, p));
    p = _mm256_add_pd(one, _mm256_mul_pd(f, p));
    const __m256d r = _mm256_mul_pd(_mm256_mul_pd(p, table), scale);
    // kept: v >= floor and -e < 64
    const __m256d in = _mm256_and_pd(_mm256_cmp_pd(v, vfloor, _CMP_GE_OQ),
                                     _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm_cmpgt_epi32(e, below))));
    _mm256_storeu_pd(w + i, _mm256_and_pd(in, r));
  }
  weights_plain(data, i, n, max, floor_, inv, frac, w);
}
#endif

double svc_weigh(const float *data, int64_t n, double max, double floor_, double inv, const double *frac, double *w, uint16_t *at,
                 double *mass, int buckets, int avx2) {
#if defined(__x86_64__)
  if (avx2) weights_avx2(data, n, max, floor_, inv, frac, w);
  else weights_plain(data, 0, n, max, floor_, inv, frac, w);
#else
  (void)avx2;
  weights_plain(data, 0, n, max, floor_, inv, frac, w);
#endif
  double z = 0;
  if (!at) {
    for (int64_t i = 0; i < n; i++) z += w[i];
    return z;
  }
  const double scale = buckets / (max - floor_);
  for (int b = 0; b < buckets; b++) mass[b] = 0;
  for (int64_t i = 0; i < n; i++) {
    const double v = data[i];
    if (v >= floor_) {
      const int q = (int)((max - v) * scale), b = q < buckets ? q : buckets - 1;
      z += w[i];
      at[i] = (uint16_t)b;
      mass[b] += w[i];
    } else at[i] = (uint16_t)buckets;
  }
  return z;
}

int64_t svc_bucket_members(const uint16_t *at, int64_t n, int b, int32_t *members) {
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++)
    if (at[i] == b) members[m++] = (int32_t)i;
  return m;
}

int64_t svc_draw_kept(const float *data, const double *w, int64_t n, double end_val, double end_idx, double r) {
  int64_t last = -1;
  for (int64_t i = 0; i < n; i++) {
    const double wi = w[i], v = data[i];
    if (wi == 0 || !(v > end_val || (v == end_val && (double)i <= end_idx))) continue;
    last = i;
    r -= wi;
    if (r <= 0) return i;
  }
  return last;
}

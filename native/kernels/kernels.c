// 4-bit matrix products for ONNX Runtime's MatMulNBits layout (bits=4, block_size=32, symmetric: zero point 8),
// with activations quantized per block of 32 to int8 as ONNX Runtime does at accuracy_level 4. The weights are
// repacked once so that, on AVX-512 VNNI, each 32-bit lane of one register accumulates one column's block.
// A plain-C path does the same integer sums and the same fused float steps, so both give identical bits.
// Also a decoder layer's whole MLP (gate, up, SiLU with MLAS's logistic function, down) of three such products.
// Also 8-bit products for the q8 graphs' DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul pattern (int8
// weights [K][N] with one scale per column), quantizing the activations to uint8 as ONNX Runtime does.
// Also the steps between a layer's products (RMSNorm, residual sums, biases) in ONNX Runtime's own float order,
// and the Node-API entry of the attention kernel (attention.c). Calls on more than one thread share a pool of
// threads kept between calls.
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>

#include "attention.h"
#include "logistic.h"
#include "products.h"
#include "weigh.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma")))
#endif

// IEEE half to float: exact, as the AVX-512 conversion (vcvtph2ps) is.
static float half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
  float f;
  if (e == 0) {
    f = ldexpf((float)m, -24);
    return sign ? -f : f;
  }
  const uint32_t bits = sign | (e == 31 ? 0x7f800000u | (m << 13) : ((e + 112) << 23) | (m << 13));
  memcpy(&f, &bits, sizeof f);
  return f;
}

// The half whose value is exactly f, if there is one (finite values only).
static int half_exact(float f, uint16_t *h) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  const uint32_t sign = (bits >> 16) & 0x8000u, e = (bits >> 23) & 255u, m = bits & 0x7fffffu;
  if (e == 255) return 0;
  if (e == 0 && m == 0) *h = (uint16_t)sign;
  else if (e >= 113 && e <= 142 && (m & 0x1fffu) == 0) *h = (uint16_t)(sign | ((e - 112) << 10) | (m >> 13));
  else {
    const float units = fabsf(f) * 16777216.f; // subnormal halves: whole multiples of 2^-24 below 2^-14
    if (units != floorf(units) || units < 1.f || units > 1023.f) return 0;
    *h = (uint16_t)(sign | (uint32_t)units);
  }
  return half_to_float(*h) == f;
}

static const napi_type_tag PACKED_TAG = {0x7376636b65726e31ULL, 0x71347061636b6564ULL};

static void *alloc64(size_t bytes) {
  return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
}

static void pack(Packed *w, const uint8_t *b, const float *scales) {
  const int nb = w->nb;
  uint8_t *out = w->packed;
  for (int g = 0; g < w->np / 16; g++)
    for (int bl = 0; bl < nb; bl++) {
      for (int s = 0; s < 4; s++)
        for (int j = 0; j < 16; j++)
          for (int t = 0; t < 4; t++) {
            const int col = g * 16 + j;
            if (col >= w->n) {
              *out++ = 0;
              continue;
            }
            const uint8_t *blk = b + ((size_t)col * nb + bl) * 16;
            const int k1 = 4 * s + t, k2 = 16 + 4 * s + t;
            const uint8_t c1 = (blk[k1 / 2] >> (4 * (k1 & 1))) & 15, c2 = (blk[k2 / 2] >> (4 * (k2 & 1))) & 15;
            *out++ = (uint8_t)(c1 | (c2 << 4));
          }
      for (int j = 0; j < 16; j++) {
        const int col = g * 16 + j;
        const float sc = col < w->n ? scales[(size_t)col * nb + bl] : 0.f;
        const size_t at = ((size_t)g * nb + bl) * 16 + j;
        if (w->sh) half_exact(sc, &w->sh[at]);
        else w->sw[at] = sc;
      }
    }
}

// lrintf rounds half to even in the default rounding mode, as the x64 conversion ONNX Runtime uses does.
static void quant_row(const float *x, int k, int8_t *q, float *sa, float *c) {
  for (int b = 0; b < k / 32; b++) {
    const float *xb = x + (size_t)b * 32;
    float amax = 0;
    for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(xb[i]));
    const float s = amax / 127.f, inv = amax != 0.f ? 127.f / amax : 0.f; // 127 / amax in one step, as MLAS
    int sum = 0;
    for (int i = 0; i < 32; i++) {
      const int v = (int)lrintf(xb[i] * inv);
      q[b * 32 + i] = (int8_t)v;
      sum += v;
    }
    sa[b] = s;
    c[b] = 8.f * s * sum;
  }
}

// Group g (16 columns), rows [r0, r0 + rows), rows <= 4, blocks [b0, b1) of k: from b0 > 0 on, the sums so far
// are read back from y, so a product done in segments of k adds in the same order as one done whole. Codes are
// unsigned (0..15): the integer sum is sum(code * q), and sa * sum - c takes the implicit zero point 8 back out.
static void group_portable(const void *arg, int g, int r0, int rows, int b0, int b1) {
  const Job *job = arg;
  const Packed *w = job->w;
  const int nb = w->nb;
  const uint8_t *p = w->packed + ((size_t)g * nb + b0) * 256;
  const size_t s0 = (size_t)g * 16 * nb;
  const int n0 = g * 16, cols = w->n - n0 < 16 ? w->n - n0 : 16;
  float acc[4][16] = {{0}};
  if (b0 > 0)
    for (int r = 0; r < rows; r++) memcpy(acc[r], job->y + (size_t)(r0 + r) * w->n + n0, (size_t)cols * sizeof(float));
  for (int b = b0; b < b1; b++, p += 256) {
    for (int r = 0; r < rows; r++) {
      const int8_t *a = job->q + (size_t)(r0 + r) * w->k + (size_t)b * 32;
      const float sa = job->sa[(size_t)(r0 + r) * nb + b], c = job->c[(size_t)(r0 + r) * nb + b];
      for (int j = 0; j < 16; j++) {
        int32_t s = 0;
        for (int st = 0; st < 4; st++)
          for (int t = 0; t < 4; t++) {
            const uint8_t v = p[st * 64 + j * 4 + t];
            s += (v & 15) * a[4 * st + t] + (v >> 4) * a[16 + 4 * st + t];
          }
        const size_t at = s0 + (size_t)b * 16 + j;
        const float scale = w->sh ? half_to_float(w->sh[at]) : w->sw[at];
        acc[r][j] = fmaf(scale, fmaf(sa, (float)s, -c), acc[r][j]);
      }
    }
  }
  for (int r = 0; r < rows; r++) memcpy(job->y + (size_t)(r0 + r) * w->n + n0, acc[r], (size_t)cols * sizeof(float));
}

#if defined(__x86_64__)
// Four int8 activations in every 32-bit lane, broadcast straight from memory (a load, where going through a
// general register first, as a plain 32-bit set1 compiled to, cost a transfer per dot product).
VNNI_TARGET static inline __attribute__((always_inline)) __m512i broadcast4(const int8_t *p) {
  float v;
  memcpy(&v, p, sizeof v);
  return _mm512_castps_si512(_mm512_set1_ps(v));
}

// rows and half are constants in each caller (group_vnni), so the accumulators stay in registers
VNNI_TARGET static inline __attribute__((always_inline)) void group_vnni_rows(const Job *job, int g, int r0, const int rows, int b0, int b1,
                                                                              const int half) {
  const Packed *w = job->w;
  const int nb = w->nb;
  const uint8_t *p = w->packed + ((size_t)g * nb + b0) * 256;
  const float *sw = half ? NULL : w->sw + (size_t)g * 16 * nb;
  const uint16_t *sh = half ? w->sh + (size_t)g * 16 * nb : NULL;
  const __m512i mask = _mm512_set1_epi8(15);
  const int n0 = g * 16, cols = w->n - n0 < 16 ? w->n - n0 : 16;
  const __mmask16 store = (__mmask16)((1u << cols) - 1);
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  if (b0 > 0)
    for (int r = 0; r < rows; r++) acc[r] = _mm512_maskz_loadu_ps(store, job->y + (size_t)(r0 + r) * w->n + n0);
  for (int b = b0; b < b1; b++, p += 256) {
    // 24 blocks (6 KB) ahead: the weights stream from memory once, so their latency is what limits (4 blocks ahead
    // read a decode step's 4-bit weights at ~29 GB/s, this at ~37 on this project's Zen 4 machine)
    _mm_prefetch((const char *)(p + 6144), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 6208), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 6272), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 6336), _MM_HINT_T0);
    _mm_prefetch(half ? (const char *)(sh + ((size_t)b + 24) * 16) : (const char *)(sw + ((size_t)b + 24) * 16), _MM_HINT_T0);
    const __m512i w0 = _mm512_load_si512(p), w1 = _mm512_load_si512(p + 64);
    const __m512i w2 = _mm512_load_si512(p + 128), w3 = _mm512_load_si512(p + 192);
    const __m512i l0 = _mm512_and_si512(w0, mask), h0 = _mm512_and_si512(_mm512_srli_epi16(w0, 4), mask);
    const __m512i l1 = _mm512_and_si512(w1, mask), h1 = _mm512_and_si512(_mm512_srli_epi16(w1, 4), mask);
    const __m512i l2 = _mm512_and_si512(w2, mask), h2 = _mm512_and_si512(_mm512_srli_epi16(w2, 4), mask);
    const __m512i l3 = _mm512_and_si512(w3, mask), h3 = _mm512_and_si512(_mm512_srli_epi16(w3, 4), mask);
    const __m512 swv = half ? _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(sh + (size_t)b * 16))) : _mm512_load_ps(sw + (size_t)b * 16);
    for (int r = 0; r < rows; r++) {
      const int8_t *a = job->q + (size_t)(r0 + r) * w->k + (size_t)b * 32;
      __m512i s = _mm512_setzero_si512();
      s = _mm512_dpbusd_epi32(s, l0, broadcast4(a));
      s = _mm512_dpbusd_epi32(s, l1, broadcast4(a + 4));
      s = _mm512_dpbusd_epi32(s, l2, broadcast4(a + 8));
      s = _mm512_dpbusd_epi32(s, l3, broadcast4(a + 12));
      s = _mm512_dpbusd_epi32(s, h0, broadcast4(a + 16));
      s = _mm512_dpbusd_epi32(s, h1, broadcast4(a + 20));
      s = _mm512_dpbusd_epi32(s, h2, broadcast4(a + 24));
      s = _mm512_dpbusd_epi32(s, h3, broadcast4(a + 28));
      const size_t i = (size_t)(r0 + r) * nb + b;
      const __m512 t = _mm512_fmsub_ps(_mm512_set1_ps(job->sa[i]), _mm512_cvtepi32_ps(s), _mm512_set1_ps(job->c[i]));
      acc[r] = _mm512_fmadd_ps(swv, t, acc[r]);
    }
  }
  for (int r = 0; r < rows; r++) _mm512_mask_storeu_ps(job->y + (size_t)(r0 + r) * w->n + n0, store, acc[r]);
}

// quant_row with AVX-512, the same steps (the product rounded to float, then to the nearest integer, ties to
// even, as lrintf does in the default rounding mode): a prompt's rows spent more time here than in the product.
VNNI_TARGET static void quant_row_vnni(const float *x, int k, int8_t *q, float *sa, float *c) {
  for (int b = 0; b < k / 32; b++) {
    const __m512 x0 = _mm512_loadu_ps(x + (size_t)b * 32), x1 = _mm512_loadu_ps(x + (size_t)b * 32 + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
    const float s = amax / 127.f, inv = amax != 0.f ? 127.f / amax : 0.f; // 127 / amax in one step, as MLAS
    const __m512 iv = _mm512_set1_ps(inv);
    const __m512i v0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, iv)), v1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, iv));
    _mm_storeu_si128((__m128i *)(q + (size_t)b * 32), _mm512_cvtepi32_epi8(v0));
    _mm_storeu_si128((__m128i *)(q + (size_t)b * 32 + 16), _mm512_cvtepi32_epi8(v1));
    sa[b] = s;
    c[b] = 8.f * s * (float)_mm512_reduce_add_epi32(_mm512_add_epi32(v0, v1));
  }
}

VNNI_TARGET static void group_vnni(const void *arg, int g, int r0, int rows, int b0, int b1) {
  const Job *job = arg;
  if (job->w->sh) switch (rows) {
      case 4: group_vnni_rows(job, g, r0, 4, b0, b1, 1); break;
      case 3: group_vnni_rows(job, g, r0, 3, b0, b1, 1); break;
      case 2: group_vnni_rows(job, g, r0, 2, b0, b1, 1); break;
      default: group_vnni_rows(job, g, r0, 1, b0, b1, 1); break;
    }
  else switch (rows) {
      case 4: group_vnni_rows(job, g, r0, 4, b0, b1, 0); break;
      case 3: group_vnni_rows(job, g, r0, 3, b0, b1, 0); break;
      case 2: group_vnni_rows(job, g, r0, 2, b0, b1, 0); break;
      default: group_vnni_rows(job, g, r0, 1, b0, b1, 0); break;
    }
}

static int cpu_has_vnni(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("fma");
}
#else
static int cpu_has_vnni(void) {
  return 0;
}
#endif

// --- 8-bit weights (MatMulInteger with int8 W [K][N], one scale per column) ---

static const napi_type_tag PACKED8_TAG = {0x7376636b65726e31ULL, 0x71387061636b6564ULL};

static void pack8(Packed8 *w, const int8_t *b, const float *scales, int zp) {
  int8_t *out = w->packed;
  for (int g = 0; g < w->np / 16; g++) {
    int32_t sum[16] = {0};
    for (int s = 0; s < w->kp / 4; s++)
      for (int j = 0; j < 16; j++)
        for (int t = 0; t < 4; t++) {
          const int col = g * 16 + j, k = 4 * s + t;
          const int v = col < w->n && k < w->k ? b[(size_t)k * w->n + col] - zp : 0;
          *out++ = (int8_t)v;
          sum[j] += v;
        }
    for (int j = 0; j < 16; j++) {
      const int col = g * 16 + j;
      w->wsum[col] = sum[j];
      w->sw[col] = col < w->n ? scales[col] : 0.f;
    }
  }
}

// ONNX Runtime's DynamicQuantizeLinear (GetQuantizationParameter, then MlasQuantizeLinear) over all m rows:
// scale = (max(0, max x) - min(0, min x)) / 255, or 1 where both are 0; zp = round(clamp(0 - min / scale, 0, 255));
// q = round(clamp(x / scale, -zp, 255 - zp)) + zp. A true division (not a reciprocal's product), clamps in the
// order and with the NaN rule of MAXPS/MINPS, and lrintf/nearbyintf round half to even as CVTPS2DQ does.
void svc_quant8_params(float lo, float hi, float *scale, int32_t *zp) {
  const float s = hi == lo ? 1.f : (hi - lo) / 255.f;
  *scale = s;
  *zp = (int)nearbyintf(fmaxf(0.f, fminf(255.f, 0.f - lo / s)));
}

static void quant8(const float *x, int64_t m, int k, int kp, void *out, float *scale, int32_t *zp) {
  uint8_t *q = out;
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < m * k; i++) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
  svc_quant8_params(lo, hi, scale, zp);
  const float s = *scale;
  const int z = *zp;
  const float qlo = (float)-z, qhi = (float)(255 - z);
  for (int64_t r = 0; r < m; r++) {
    const float *xr = x + r * k;
    uint8_t *qr = q + r * kp;
    for (int i = 0; i < k; i++) {
      float v = xr[i] / s;
      v = v > qlo ? v : qlo;
      v = v < qhi ? v : qhi;
      qr[i] = (uint8_t)(lrintf(v) + z);
    }
    for (int i = k; i < kp; i++) qr[i] = 0;
  }
}

#if defined(__x86_64__)
// quant8 16 values at a time, with the same results: MINPS/MAXPS keep the running value (their second operand)
// where x is NaN, as the comparisons above do; the same division, clamps and rounding (CVTPS2DQ, half to even).
// A prompt's activations took longer to quantize one by one than to multiply (k = 4,864: ~2.9 ms for 128 rows).
VNNI_TARGET static void quant8_vnni(const float *x, int64_t m, int k, int kp, void *out, float *scale, int32_t *zp) {
  uint8_t *q = out;
  __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
  const int64_t total = m * k;
  for (int64_t i = 0; i < total; i += 16) {
    // zeros past the end move neither bound (both start at 0)
    const __mmask16 t = total - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (total - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(t, x + i);
    lo = _mm512_min_ps(v, lo);
    hi = _mm512_max_ps(v, hi);
  }
  svc_quant8_params(_mm512_reduce_min_ps(lo), _mm512_reduce_max_ps(hi), scale, zp);
  const __m512 s = _mm512_set1_ps(*scale), qlo = _mm512_set1_ps((float)-*zp), qhi = _mm512_set1_ps((float)(255 - *zp));
  const __m512i z = _mm512_set1_epi32(*zp);
  for (int64_t r = 0; r < m; r++) {
    const float *xr = x + r * k;
    uint8_t *qr = q + r * kp;
    for (int i = 0; i < k; i += 16) {
      const __mmask16 t = k - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (k - i)) - 1);
      __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(t, xr + i), s);
      v = _mm512_min_ps(_mm512_max_ps(v, qlo), qhi);
      _mm512_mask_cvtepi32_storeu_epi8(qr + i, t, _mm512_add_epi32(_mm512_cvtps_epi32(v), z));
    }
    for (int i = k; i < kp; i++) qr[i] = 0;
  }
}
#endif

// y = float(sum (q - zp)(W - w_zp)) * (sa * sw[col]): ONNX Runtime's int32 product, then its per-column multiplier.
static void group8_portable(const void *arg, int g, int r0, int rows, int b0, int b1) {
  (void)b0, (void)b1; // always the whole of k (run_job's seg 0)
  const Job8 *job = arg;
  const Packed8 *w = job->w;
  const int steps = w->kp / 4, n0 = g * 16, cols = w->n - n0 < 16 ? w->n - n0 : 16;
  const int8_t *p = w->packed + (size_t)g * steps * 64;
  for (int r = 0; r < rows; r++) {
    const uint8_t *a = (const uint8_t *)job->q + (size_t)(r0 + r) * w->kp;
    int32_t acc[16] = {0};
    for (int s = 0; s < steps; s++)
      for (int j = 0; j < 16; j++)
        for (int t = 0; t < 4; t++) acc[j] += a[4 * s + t] * p[(size_t)s * 64 + j * 4 + t];
    float *y = job->y + (size_t)(r0 + r) * w->n + n0;
    const int32_t zp = job->zp[r0 + r];
    const float sa = job->sa[r0 + r];
    for (int j = 0; j < cols; j++) y[j] = (float)(acc[j] - zp * w->wsum[n0 + j]) * (sa * w->sw[n0 + j]);
  }
}

#if defined(__x86_64__)
// rows is a constant in each caller below, so the accumulators stay in registers: two per row (even and odd
// steps) so that one row is not one chain of dependent vpdpbusd.
VNNI_TARGET static inline __attribute__((always_inline)) void group8_vnni_rows(const Job8 *job, int g, int r0, const int rows) {
  const Packed8 *w = job->w;
  const int steps = w->kp / 4;
  const int8_t *p = w->packed + (size_t)g * steps * 64;
  const uint8_t *a[4];
  for (int r = 0; r < rows; r++) a[r] = (const uint8_t *)job->q + (size_t)(r0 + r) * w->kp;
  __m512i acc0[4], acc1[4];
  for (int r = 0; r < rows; r++) acc0[r] = acc1[r] = _mm512_setzero_si512();
  int s = 0;
  for (; s + 4 <= steps; s += 4, p += 256) {
    // 6 KB ahead, as the 4-bit kernel: the weights stream from memory once, so their latency is what limits
    _mm_prefetch((const char *)(p + 6144), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 6208), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 6272), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 6336), _MM_HINT_T0);
    const __m512i w0 = _mm512_load_si512(p), w1 = _mm512_load_si512(p + 64);
    const __m512i w2 = _mm512_load_si512(p + 128), w3 = _mm512_load_si512(p + 192);
    for (int r = 0; r < rows; r++) {
      const int8_t *v = (const int8_t *)a[r] + (size_t)s * 4;
      acc0[r] = _mm512_dpbusd_epi32(acc0[r], broadcast4(v), w0);
      acc1[r] = _mm512_dpbusd_epi32(acc1[r], broadcast4(v + 4), w1);
      acc0[r] = _mm512_dpbusd_epi32(acc0[r], broadcast4(v + 8), w2);
      acc1[r] = _mm512_dpbusd_epi32(acc1[r], broadcast4(v + 12), w3);
    }
  }
  for (; s < steps; s++, p += 64) {
    const __m512i w0 = _mm512_load_si512(p);
    for (int r = 0; r < rows; r++) acc0[r] = _mm512_dpbusd_epi32(acc0[r], broadcast4((const int8_t *)a[r] + (size_t)s * 4), w0);
  }
  const int n0 = g * 16, cols = w->n - n0 < 16 ? w->n - n0 : 16;
  const __mmask16 store = (__mmask16)((1u << cols) - 1);
  const __m512i wsum = _mm512_load_si512(w->wsum + n0);
  const __m512 sw = _mm512_load_ps(w->sw + n0);
  for (int r = 0; r < rows; r++) {
    const __m512i corr = _mm512_mullo_epi32(wsum, _mm512_set1_epi32(job->zp[r0 + r]));
    const __m512 mult = _mm512_mul_ps(_mm512_set1_ps(job->sa[r0 + r]), sw);
    const __m512i t = _mm512_sub_epi32(_mm512_add_epi32(acc0[r], acc1[r]), corr);
    _mm512_mask_storeu_ps(job->y + (size_t)(r0 + r) * w->n + n0, store, _mm512_mul_ps(_mm512_cvtepi32_ps(t), mult));
  }
}

// how far ahead of a pair's reads its weights are fetched (1, 2 and 4 KB tried: 4 best, by a little)
enum { PAIR_AHEAD = 4096 };
// A prompt's rows: groups 2g and 2g + 1 (32 columns) at once, so that each broadcast of a row's activations
// feeds two dot products (a 4-row chunk of one group loaded 5 registers for 4 of them).
VNNI_TARGET static inline __attribute__((always_inline)) void group8_pair_rows(const Job8 *job, int g, int r0, const int rows) {
  const Packed8 *w = job->w;
  const int steps = w->kp / 4, two = 2 * g + 1 < w->np / 16;
  const int8_t *p0 = w->packed + (size_t)(2 * g) * steps * 64, *p1 = two ? p0 + (size_t)steps * 64 : p0;
  const uint8_t *a[4];
  for (int r = 0; r < rows; r++) a[r] = (const uint8_t *)job->q + (size_t)(r0 + r) * w->kp;
  __m512i acc0[4], acc1[4];
  for (int r = 0; r < rows; r++) acc0[r] = acc1[r] = _mm512_setzero_si512();
  for (int s = 0; s < steps; s++) {
    // the first chunk of rows reads the weights from memory: ahead of it, as the one-group kernels do
    _mm_prefetch((const char *)(p0 + (size_t)s * 64 + PAIR_AHEAD), _MM_HINT_T0);
    _mm_prefetch((const char *)(p1 + (size_t)s * 64 + PAIR_AHEAD), _MM_HINT_T0);
    const __m512i w0 = _mm512_load_si512(p0 + (size_t)s * 64), w1 = _mm512_load_si512(p1 + (size_t)s * 64);
    for (int r = 0; r < rows; r++) {
      const __m512i v = broadcast4((const int8_t *)a[r] + (size_t)s * 4);
      acc0[r] = _mm512_dpbusd_epi32(acc0[r], v, w0);
      acc1[r] = _mm512_dpbusd_epi32(acc1[r], v, w1);
    }
  }
  for (int h = 0; h < 1 + two; h++) {
    const int n0 = (2 * g + h) * 16, cols = w->n - n0 < 16 ? w->n - n0 : 16;
    const __mmask16 store = (__mmask16)((1u << cols) - 1);
    const __m512i wsum = _mm512_load_si512(w->wsum + n0);
    const __m512 sw = _mm512_load_ps(w->sw + n0);
    for (int r = 0; r < rows; r++) {
      const __m512i corr = _mm512_mullo_epi32(wsum, _mm512_set1_epi32(job->zp[r0 + r]));
      const __m512 mult = _mm512_mul_ps(_mm512_set1_ps(job->sa[r0 + r]), sw);
      const __m512i t = _mm512_sub_epi32(h ? acc1[r] : acc0[r], corr);
      _mm512_mask_storeu_ps(job->y + (size_t)(r0 + r) * w->n + n0, store, _mm512_mul_ps(_mm512_cvtepi32_ps(t), mult));
    }
  }
}

VNNI_TARGET static void group8_pair_vnni(const void *arg, int g, int r0, int rows, int b0, int b1) {
  (void)b0, (void)b1;
  const Job8 *job = arg;
  switch (rows) {
    case 4: group8_pair_rows(job, g, r0, 4); break;
    case 3: group8_pair_rows(job, g, r0, 3); break;
    case 2: group8_pair_rows(job, g, r0, 2); break;
    default: group8_pair_rows(job, g, r0, 1); break;
  }
}

VNNI_TARGET static void group8_vnni(const void *arg, int g, int r0, int rows, int b0, int b1) {
  (void)b0, (void)b1;
  const Job8 *job = arg;
  switch (rows) {
    case 4: group8_vnni_rows(job, g, r0, 4); break;
    case 3: group8_vnni_rows(job, g, r0, 3); break;
    case 2: group8_vnni_rows(job, g, r0, 2); break;
    default: group8_vnni_rows(job, g, r0, 1); break;
  }
}
#endif

typedef struct {
  const void *job;
  GroupFn fn;
  PairFn pair; // one or two rows' groups two at a time, where the caller gives it (NULL: one at a time)
  int m, g0, g1, nb, seg;
} Part;

// Rows in blocks of ROW_BLOCK, then group by group, then segments of k (seg blocks of 32, 0: all of k), then
// chunks of 4 rows: a segment of a group's weights stays in the core's first cache while every chunk of the
// block reads it, and the block's activations stay in its second while every group reads them. Without the
// row blocks, a prompt's activations streamed in again for every group (1,024 rows of a 0.5B MLP at ~120 G
// MAC/s against ~170 for 64 rows); without the segments, a group of 16 columns of a 4,864-long k (48 KB) was
// read from the second cache again by every chunk (~137 G MAC/s against ~195 for k = 896).
enum { ROW_BLOCK = 64 };

static void *run_part(void *arg) {
  const Part *part = arg;
  if (part->m <= 2 && part->pair) {
    // a decode step's rows (one or two): the part's groups two at a time, one from each half of its range, so
    // that its weights come in as two streams (see PairFn); with two rows, the pair's weights are read again
    // from the core's caches for the second
    const int half = (part->g1 - part->g0) / 2;
    for (int g = part->g0; g < part->g0 + half; g++)
      for (int r = 0; r < part->m; r++) part->pair(part->job, g, part->job, g + half, r);
    if ((part->g1 - part->g0) & 1) part->fn(part->job, part->g1 - 1, 0, part->m, 0, part->nb);
    return NULL;
  }
  const int seg = part->seg > 0 && part->m > 4 ? part->seg : part->nb;
  for (int r0 = 0; r0 < part->m; r0 += ROW_BLOCK) {
    const int r1 = part->m - r0 < ROW_BLOCK ? part->m : r0 + ROW_BLOCK;
    for (int g = part->g0; g < part->g1; g++)
      for (int b0 = 0; b0 < part->nb; b0 += seg) {
        const int b1 = part->nb - b0 < seg ? part->nb : b0 + seg;
        for (int r = r0; r < r1; r += 4) part->fn(part->job, g, r, r1 - r < 4 ? r1 - r : 4, b0, b1);
      }
  }
  return NULL;
}

// Blocks of 32 per segment for a 4-bit product of nb blocks: about 24 KB of a group's weights and scales
// (at most 20 bytes a block per column), in equal segments.
static int q4_segment(int nb) {
  const int most = 24 * 1024 / (16 * 20), parts = (nb + most - 1) / most;
  return (nb + parts - 1) / parts;
}

// The threads a call splits its parts over: the caller and up to POOL_MAX - 1 workers, made once and kept. A
// worker that finds no work spins for SPIN_NS (a decode step calls the kernels every few microseconds, and
// waking a sleeping thread costs far more than that on a virtual machine), then sleeps until the next call.
// Each part goes to whichever thread claims it first, the caller included: a worker still waking (a sleeping
// one could take a millisecond to get a core, in a prompt's calls after an attention stage put the workers to
// sleep) leaves its part to the caller instead of holding the call up. One call at a time: a second caller
// waits for the first.
enum { POOL_MAX = 64 };
static const int64_t SPIN_NS = 1000000;

static struct {
  pthread_mutex_t lock, call;
  pthread_cond_t wake;
  int workers;                 // made so far
  unsigned generation;         // bumped (under lock) for each call that has work for the workers
  const Part *parts;
  int n;                       // parts of the current call
  uint64_t next;               // the current call's generation (high half) and its next unclaimed part
  int done;                    // parts of the current call finished
  unsigned made_at[POOL_MAX];  // the generation before each worker's first call
  int resting;                 // set by rest(): spinning workers go to sleep now, until the next call
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL, 0, 0, 0, {0}, 0};

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// Runs the parts of call g (n of them) that no thread has claimed yet. A thread that looks late, after call g
// has ended, claims nothing: the generation in `next` is another.
static void run_claimed(unsigned g, int n, const Part *parts) {
  uint64_t v = __atomic_load_n(&pool.next, __ATOMIC_ACQUIRE);
  for (;;) {
    if ((unsigned)(v >> 32) != g || (int)(uint32_t)v >= n) return;
    if (!__atomic_compare_exchange_n(&pool.next, &v, v + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
    run_part((void *)&parts[(uint32_t)v]);
    __atomic_add_fetch(&pool.done, 1, __ATOMIC_ACQ_REL);
    v = __atomic_load_n(&pool.next, __ATOMIC_ACQUIRE);
  }
}

static void *pool_worker(void *arg) {
  const int id = (int)(intptr_t)arg;
  unsigned seen = pool.made_at[id]; // the call that made it comes after
  for (;;) {
    const int64_t until = now_ns() + SPIN_NS;
    unsigned g;
    for (int i = 0; (g = __atomic_load_n(&pool.generation, __ATOMIC_ACQUIRE)) == seen; i++) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
      if ((i & 255) == 255 && (__atomic_load_n(&pool.resting, __ATOMIC_RELAXED) || now_ns() > until)) {
        pthread_mutex_lock(&pool.lock);
        while ((g = pool.generation) == seen) pthread_cond_wait(&pool.wake, &pool.lock);
        pthread_mutex_unlock(&pool.lock);
        break;
      }
    }
    // the call's parts as of generation g: a worker the last call did not need may look only now, while the
    // caller already sets up the next one
    int n;
    const Part *parts;
    do {
      seen = g;
      n = __atomic_load_n(&pool.n, __ATOMIC_ACQUIRE);
      parts = __atomic_load_n(&pool.parts, __ATOMIC_ACQUIRE);
    } while ((g = __atomic_load_n(&pool.generation, __ATOMIC_ACQUIRE)) != seen);
    run_claimed(g, n, parts);
  }
  return NULL;
}

static void run_job(const void *job, int groups, int m, int nb, int seg, GroupFn fn, PairFn pair, int threads) {
  if (threads > groups) threads = groups;
  if (threads < 1) threads = 1;
  if (threads > POOL_MAX) threads = POOL_MAX; // beyond that a weight stream this size gains nothing
  Part parts[POOL_MAX];
  for (int i = 0; i < threads; i++) parts[i] = (Part){job, fn, pair, m, (int)((int64_t)groups * i / threads), (int)((int64_t)groups * (i + 1) / threads), nb, seg};
  if (threads == 1) {
    run_part(&parts[0]);
    return;
  }
  pthread_mutex_lock(&pool.call);
  while (pool.workers < threads - 1) {
    pthread_t id;
    pool.made_at[pool.workers] = pool.generation;
    if (pthread_create(&id, NULL, pool_worker, (void *)(intptr_t)pool.workers) != 0) break;
    pthread_detach(id);
    pool.workers++;
  }
  pthread_mutex_lock(&pool.lock);
  const unsigned g = pool.generation + 1;
  __atomic_store_n(&pool.resting, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&pool.parts, parts, __ATOMIC_RELEASE);
  __atomic_store_n(&pool.n, threads, __ATOMIC_RELEASE);
  __atomic_store_n(&pool.done, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&pool.next, (uint64_t)g << 32, __ATOMIC_RELEASE);
  __atomic_store_n(&pool.generation, g, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.lock);
  run_claimed(g, threads, parts); // with no worker to be had, the caller runs every part itself
  while (__atomic_load_n(&pool.done, __ATOMIC_ACQUIRE) < threads) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  pthread_mutex_unlock(&pool.call);
}


// An 8-bit product's job over its column groups: on AVX-512 a prompt's rows (m > 4) two groups at a time.
static void run_job8(const Job8 *job, GroupFn fn, PairFn pair, int threads) {
#if defined(__x86_64__)
  if (fn == group8_vnni && job->m > 4) {
    run_job(job, (job->w->np / 16 + 1) / 2, job->m, 1, 0, group8_pair_vnni, NULL, threads);
    return;
  }
#endif
  run_job(job, job->w->np / 16, job->m, 1, 0, fn, pair, threads); // k in one piece
}

// The threads worth a product of `bytes` of weights over m rows: a decode step's products under `alone` bytes
// (its path's, Path) run on one thread, where splitting them costs more than it saves.
static int few_threads(int64_t bytes, int64_t m, int threads, int64_t alone) {
  return m <= 4 && bytes < alone ? 1 : threads;
}

// --- Fused 4-bit MLP: y = down(silu(gate(x)) * up(x)), a Llama/Qwen2 decoder layer's MLP as ONNX Runtime runs
// it from MatMulNBits (gate, up, down; accuracy_level 4), Sigmoid, Mul, Mul ---

// MLAS's logistic function (MlasComputeLogistic), which ONNX Runtime's CPU Sigmoid calls, and QuickGelu too (what
// its graph optimizer fuses Mul(g, Sigmoid(g)) into): a rational approximation on [-18, 18], not 1 / (1 + exp(-x)).
// On x64 with FMA3 it runs MlasLogisticKernelFma3, whose steps are these: the clamps in MAXPS/MINPS operand order
// (a NaN passes through), x^2 by a plain product, both polynomials by fused multiply-adds, p * x, one division,
// + 0.5, and only the lower clamp (at 0) at the end.
// (its constants: logistic.h)

static float logistic(float x) {
  x = LOGISTIC_LO > x ? LOGISTIC_LO : x;
  x = LOGISTIC_HI < x ? LOGISTIC_HI : x;
  const float x2 = x * x;
  float p = fmaf(x2, ALPHA_9, ALPHA_7);
  p = fmaf(x2, p, ALPHA_5);
  p = fmaf(x2, p, ALPHA_3);
  p = fmaf(x2, p, ALPHA_1);
  p = x * p;
  float q = fmaf(x2, BETA_10, BETA_8);
  q = fmaf(x2, q, BETA_6);
  q = fmaf(x2, q, BETA_4);
  q = fmaf(x2, q, BETA_2);
  q = fmaf(x2, q, BETA_0);
  const float s = p / q + 0.5f;
  return 0.f > s ? 0.f : s;
}

// g[j] <- (g[j] * sigmoid(g[j])) * u[j] for cols (<= 16) columns: Mul(g, sigmoid) (QuickGelu's
// MlasEltwiseMul(input, logistic)), then Mul(silu, u), each rounded to float as ONNX Runtime does.
static void silu_mul_portable(float *g, const float *u, int cols) {
  for (int j = 0; j < cols; j++) {
    const float silu = g[j] * logistic(g[j]);
    g[j] = silu * u[j];
  }
}

#if defined(__x86_64__)
VNNI_TARGET static void silu_mul_vnni(float *g, const float *u, int cols) {
  const __mmask16 k = (__mmask16)((1u << cols) - 1);
  const __m512 g0 = _mm512_maskz_loadu_ps(k, g), uv = _mm512_maskz_loadu_ps(k, u);
  const __m512 x = _mm512_min_ps(_mm512_set1_ps(LOGISTIC_HI), _mm512_max_ps(_mm512_set1_ps(LOGISTIC_LO), g0));
  const __m512 x2 = _mm512_mul_ps(x, x);
  __m512 p = _mm512_fmadd_ps(x2, _mm512_set1_ps(ALPHA_9), _mm512_set1_ps(ALPHA_7));
  p = _mm512_fmadd_ps(x2, p, _mm512_set1_ps(ALPHA_5));
  p = _mm512_fmadd_ps(x2, p, _mm512_set1_ps(ALPHA_3));
  p = _mm512_fmadd_ps(x2, p, _mm512_set1_ps(ALPHA_1));
  p = _mm512_mul_ps(x, p);
  __m512 q = _mm512_fmadd_ps(x2, _mm512_set1_ps(BETA_10), _mm512_set1_ps(BETA_8));
  q = _mm512_fmadd_ps(x2, q, _mm512_set1_ps(BETA_6));
  q = _mm512_fmadd_ps(x2, q, _mm512_set1_ps(BETA_4));
  q = _mm512_fmadd_ps(x2, q, _mm512_set1_ps(BETA_2));
  q = _mm512_fmadd_ps(x2, q, _mm512_set1_ps(BETA_0));
  const __m512 s = _mm512_max_ps(_mm512_setzero_ps(), _mm512_add_ps(_mm512_div_ps(p, q), _mm512_set1_ps(0.5f)));
  _mm512_mask_storeu_ps(g, k, _mm512_mul_ps(_mm512_mul_ps(g0, s), uv));
}
#endif

// RMSNorm of one row as ONNX Runtime's SimplifiedLayerNormalization computes it on x64: the squares summed in 8
// lanes with a fused multiply-add each, the lanes added in halves (l + l+4, then l + l+2, then 0 + 1),
// s = sqrt(sum / n + epsilon), then (x * (1 / s)) * w, every step in single precision. n is a multiple of 8.
static inline __attribute__((always_inline)) void rms_norm_steps(const float *x, const float *w, int n, float eps, float *y) {
  float lanes[8] = {0};
  for (int j = 0; j < n; j += 8)
    for (int l = 0; l < 8; l++) lanes[l] = fmaf(x[j + l], x[j + l], lanes[l]);
  for (int half = 4; half >= 1; half /= 2)
    for (int l = 0; l < half; l++) lanes[l] += lanes[l + half];
  const float inv = 1.f / sqrtf(lanes[0] / (float)n + eps);
  for (int j = 0; j < n; j++) y[j] = (x[j] * inv) * w[j];
}

static void rms_norm_row(const float *x, const float *w, int n, float eps, float *y) {
  rms_norm_steps(x, w, n, eps, y);
}

#if defined(__x86_64__)
// The same steps compiled for AVX2 and FMA, which GCC turns into one fused multiply-add a vector of 8 lanes and
// vector products (the same operations in the same order: the same bits, layer-steps.test.ts). Built for x64's
// baseline, each fmaf is a call into the C library: addRmsNorm of 896 values took 5.0 us a row and 13.9 for 4,
// here 2.1 and 3.5 (a 0.5B model's decode step makes 48 such calls).
__attribute__((target("avx2,fma"))) static void rms_norm_row_fma(const float *x, const float *w, int n, float eps, float *y) {
  rms_norm_steps(x, w, n, eps, y);
}
#endif

// The fastest path this CPU has, chosen once at load: AVX-512 VNNI, AVX2 (avx2.c), or plain C.
static enum { PATH_PORTABLE, PATH_AVX2, PATH_VNNI } cpu_path;
static const char *const PATH_NAMES[] = {"portable", "avx2", "avx512vnni"};

// The functions a call runs on: the CPU's path, or plain C where the caller asks for it (tests compare the two).
// q8_width: the bytes of an 8-bit activation as quant8 writes it for q8 (Job8).
typedef struct {
  GroupFn q4, q8;
  // NULL: one group at a time. Two rows take q4's pairs a row at a time (24 q4 MLPs of 2 rows in 0.83-0.89x
  // the time, 1 and 2 threads), but q8's two rows at once (a row at a time took 1.05-1.19x)
  PairFn q4_pair, q8_pair;
  QuantFn quant;
  Quant8Fn quant8;
  SiluMulFn silu_mul;
  // one row's RMSNorm (rms_norm_steps)
  void (*rms_norm)(const float *x, const float *w, int n, float eps, float *y);
  // 3 or more rows in the layout the path's q4 kernel reads them from (Job's rows4), and its bytes a chunk of 4;
  // NULL: none (one or two rows take the pair kernel, a row at a time)
  void (*rows4)(const int8_t *q, const float *sa, const float *c, int m, int k, void *out);
  size_t (*rows4_bytes)(int k);
  size_t q8_width;
  // a decode step's products under this many bytes run on one thread (few_threads). With AVX-512 VNNI an
  // attention's projections of a 0.5B model (0.05-0.5 MB) ran slower split over two threads than on one
  // (measured in a step: 22 against 15.5 µs for 896 × 896), the split's handing over and each thread's own
  // prefetch ramp costing more than half the reads save. The AVX2 kernels take 2-3x as long a byte: 24 layers'
  // q and o (896 × 896) split over two threads took 0.64-0.75x the time (one row and four, 4 and 8 bits; this
  // AMD EPYC, the two alternating; 1.05-1.07x the decode rate of a q4 0.5B model at two threads, both ways
  // alternating in one process), k and v (896 × 128) as long as on one. The plain-C path, not measured, is left
  // at 1 MB.
  int64_t alone;
} Path;

static Path path_for(bool portable) {
#if defined(__x86_64__)
  if (!portable && cpu_path == PATH_VNNI)
    return (Path){group_vnni, group8_vnni, NULL, NULL, quant_row_vnni, quant8_vnni, silu_mul_vnni, rms_norm_row_fma, NULL, NULL, 1, 1 << 20};
  if (!portable && cpu_path == PATH_AVX2)
    return (Path){svc_group_avx2, svc_group8_avx2, svc_pair_avx2, svc_pair8_avx2, svc_quant_row_avx2, svc_quant8_avx2, svc_silu_mul_avx2,
                  rms_norm_row_fma, svc_rows4_avx2, svc_rows4_bytes, 2, 1 << 17};
#endif
  return (Path){group_portable, group8_portable, NULL, NULL, quant_row, quant8, silu_mul_portable, rms_norm_row, NULL, NULL, 1, 1 << 20};
}

// x's m rows quantized for an 8-bit product in `sets` equal sets, each with its own scale and zero point, into q
// and each row's sa[r] and zp[r] (Job8). One set is ONNX Runtime's DynamicQuantizeLinear of the whole tensor; a
// set per batch row makes a row's products independent of the others in its batch (a decode step gives it the
// values it gets alone).
static void quant8_sets(const Path *path, const float *x, int64_t m, int k, int kp, void *q, int64_t sets, float *sa, int32_t *zp) {
  const int64_t per = m / sets;
  for (int64_t s = 0; s < sets; s++) {
    float scale;
    int32_t z;
    path->quant8(x + s * per * k, per, k, kp, (uint8_t *)q + (size_t)(s * per * kp) * path->q8_width, &scale, &z);
    for (int64_t r = s * per; r < (s + 1) * per; r++) sa[r] = scale, zp[r] = z;
  }
}

// Gate and up in one pass over the column groups: group g of both products (same activations, same columns),
// then h for those columns, written over gate's output.
// The products' jobs are Jobs (4 bits) or Job8s (8 bits), run by fn; g and u are their outputs, [rows][n].
typedef struct {
  const void *gate, *up;
  float *g, *u;
  int n;
  GroupFn fn;
  PairFn pair;
  SiluMulFn silu_mul;
} MlpJob;

static void group_mlp(const void *arg, int g, int r0, int rows, int b0, int b1) {
  const MlpJob *job = arg;
  // gate's and up's weights as two streams
  if (rows <= 2 && job->pair) for (int r = r0; r < r0 + rows; r++) job->pair(job->gate, g, job->up, g, r);
  else {
    job->fn(job->gate, g, r0, rows, b0, b1); // all of k (run_job's seg 0): h needs the whole sums
    job->fn(job->up, g, r0, rows, b0, b1);
  }
  const int n = job->n, n0 = g * 16, cols = n - n0 < 16 ? n - n0 : 16;
  for (int r = r0; r < r0 + rows; r++) job->silu_mul(job->g + (size_t)r * n + n0, job->u + (size_t)r * n + n0, cols);
}

// --- Node-API glue ---

static napi_value throw_type(napi_env env, const char *msg) {
  napi_throw_type_error(env, NULL, msg);
  return NULL;
}

// A whole number in [lo, hi], or 0 with a TypeError thrown.
static int get_int(napi_env env, napi_value v, int64_t lo, int64_t hi, int64_t *out, const char *msg) {
  double d;
  if (napi_get_value_double(env, v, &d) != napi_ok || !(d >= (double)lo && d <= (double)hi) || d != floor(d)) {
    throw_type(env, msg);
    return 0;
  }
  *out = (int64_t)d;
  return 1;
}

static int get_typed(napi_env env, napi_value v, napi_typedarray_type want, void **data, size_t *len, const char *msg) {
  bool is;
  napi_typedarray_type type;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is || napi_get_typedarray_info(env, v, &type, len, data, NULL, NULL) != napi_ok ||
      type != want) {
    throw_type(env, msg);
    return 0;
  }
  return 1;
}

// The name of a typed array type, for TypeErrors.
static const char *type_name(napi_typedarray_type t) {
  switch (t) {
  case napi_bigint64_array: return "BigInt64Array";
  case napi_float64_array: return "Float64Array";
  case napi_uint16_array: return "Uint16Array";
  case napi_int32_array: return "Int32Array";
  default: return "Float32Array";
  }
}

// Typed arrays argv[at[i]] of types[i], each named names[i] in the TypeError ("fn: name must be a ...") thrown
// where one is not; 0 then.
static int get_arrays(napi_env env, const napi_value *argv, const char *fn, int n, const int *at, const char *const *names,
                      const napi_typedarray_type *types, void **data, size_t *len) {
  char msg[96];
  for (int i = 0; i < n; i++) {
    snprintf(msg, sizeof msg, "%s: %s must be a %s", fn, names[i], type_name(types[i]));
    if (!get_typed(env, argv[at[i]], types[i], &data[i], &len[i], msg)) return 0;
  }
  return 1;
}

// A packed weight handed to JavaScript: freed by `fin` when collected, its size counted as external memory.
static napi_value wrap_packed(napi_env env, void *w, int64_t bytes, napi_finalize fin, const napi_type_tag *tag) {
  napi_value ext;
  if (napi_create_external(env, w, fin, NULL, &ext) != napi_ok) {
    fin(env, w, NULL);
    return NULL;
  }
  napi_type_tag_object(env, ext, tag);
  int64_t total;
  napi_adjust_external_memory(env, bytes, &total);
  return ext;
}

// The arguments every product takes: (w, x, m, y, threads, portable?, sets?).
typedef struct {
  void *x, *y;
  int64_t m, threads, sets;
  bool portable;
} Args;

// The packed weights an external of `tag` holds (what a pack function made), or NULL.
static void *get_tagged(napi_env env, napi_value v, const napi_type_tag *tag) {
  napi_valuetype vt;
  bool tagged = false;
  void *w = NULL;
  if (napi_typeof(env, v, &vt) != napi_ok || vt != napi_external || napi_check_object_type_tag(env, v, tag, &tagged) != napi_ok || !tagged ||
      napi_get_value_external(env, v, &w) != napi_ok) {
    return NULL;
  }
  return w;
}

// The optional `portable` flag, argv[i]: false where it is absent or undefined; 0 with a TypeError (msg) when it is
// not a boolean.
static int get_portable(napi_env env, const napi_value *argv, size_t argc, size_t i, bool *portable, const char *msg) {
  *portable = false;
  if (argc <= i) return 1;
  napi_valuetype vt;
  napi_typeof(env, argv[i], &vt);
  if (vt != napi_undefined && napi_get_value_bool(env, argv[i], portable) != napi_ok) return throw_type(env, msg), 0;
  return 1;
}

// The optional `sets` of an 8-bit product, argv[i]: the equal sets its m rows are quantized in, each set by itself
// (quant8_sets); 1 where it is absent or undefined; 0 with a TypeError when it is not a whole number dividing m.
static int get_sets(napi_env env, const napi_value *argv, size_t argc, size_t i, int64_t m, int64_t *sets, const char *name) {
  *sets = 1;
  if (argc <= i) return 1;
  napi_valuetype vt;
  napi_typeof(env, argv[i], &vt);
  if (vt == napi_undefined) return 1;
  char msg[160];
  snprintf(msg, sizeof msg, "%s: sets must be a whole number >= 1 that divides m", name);
  if (!get_int(env, argv[i], 1, m, sets, msg)) return 0;
  if (m % *sets) return throw_type(env, msg), 0;
  return 1;
}

// The packed weights `w` (of `tag`) and the other arguments of product `name`, checked against w's k and n;
// NULL with a TypeError thrown when they do not fit. k and n are the first fields of both Packed types.
static void *product_args(napi_env env, napi_callback_info info, const napi_type_tag *tag, const char *name, const char *packer, Args *a) {
  char msg[160];
  size_t argc = 7;
  napi_value argv[7];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5) {
    snprintf(msg, sizeof msg, "%s(w, x, m, y, threads, portable?, sets?)", name);
    return throw_type(env, msg);
  }
  const int32_t *w = get_tagged(env, argv[0], tag);
  if (!w) {
    snprintf(msg, sizeof msg, "%s: w must come from %s", name, packer);
    return throw_type(env, msg);
  }
  size_t xlen, ylen;
  const struct { napi_value v; const char *what; } checks[] = {{argv[1], "x must be a Float32Array"}, {argv[3], "y must be a Float32Array"}};
  void **outs[] = {&a->x, &a->y};
  size_t *lens[] = {&xlen, &ylen};
  for (int i = 0; i < 2; i++) {
    snprintf(msg, sizeof msg, "%s: %s", name, checks[i].what);
    if (!get_typed(env, checks[i].v, napi_float32_array, outs[i], lens[i], msg)) return NULL;
  }
  snprintf(msg, sizeof msg, "%s: m must be a whole number >= 1", name);
  if (!get_int(env, argv[2], 1, INT32_MAX, &a->m, msg)) return NULL;
  snprintf(msg, sizeof msg, "%s: threads must be a whole number from 1 to 1024", name);
  if (!get_int(env, argv[4], 1, 1024, &a->threads, msg)) return NULL;
  snprintf(msg, sizeof msg, "%s: portable must be a boolean", name);
  if (!get_portable(env, argv, argc, 5, &a->portable, msg)) return NULL;
  if (!get_sets(env, argv, argc, 6, a->m, &a->sets, name)) return NULL;
  const uint64_t k = (uint64_t)w[0], n = (uint64_t)w[1];
  if ((uint64_t)xlen != (uint64_t)a->m * k) return snprintf(msg, sizeof msg, "%s: x must hold m * k values", name), throw_type(env, msg);
  if ((uint64_t)ylen != (uint64_t)a->m * n) return snprintf(msg, sizeof msg, "%s: y must hold m * n values", name), throw_type(env, msg);
  return (void *)w;
}

static void finalize_packed(napi_env env, void *data, void *hint) {
  (void)hint;
  Packed *w = data;
  int64_t left;
  napi_adjust_external_memory(env, -w->bytes, &left);
  free(w->packed);
  free(w->sw);
  free(w->sh);
  free(w);
}

static napi_value pack_q4(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4) return throw_type(env, "packQ4(b, scales, k, n)");
  int64_t k, n;
  if (!get_int(env, argv[2], 32, INT32_MAX, &k, "packQ4: k must be a whole number >= 32")) return NULL;
  if (!get_int(env, argv[3], 1, INT32_MAX - 15, &n, "packQ4: n must be a whole number >= 1")) return NULL;
  if (k % 32 != 0) return throw_type(env, "packQ4: k must be a multiple of 32");
  void *b, *scales;
  size_t blen, slen;
  if (!get_typed(env, argv[0], napi_uint8_array, &b, &blen, "packQ4: b must be a Uint8Array")) return NULL;
  if (!get_typed(env, argv[1], napi_float32_array, &scales, &slen, "packQ4: scales must be a Float32Array")) return NULL;
  const int64_t nb = k / 32;
  if ((int64_t)blen != n * nb * 16) return throw_type(env, "packQ4: b must hold n * k / 2 bytes");
  if ((int64_t)slen != n * nb) return throw_type(env, "packQ4: scales must hold n * k / 32 values");
  Packed *w = calloc(1, sizeof *w);
  if (!w) return throw_type(env, "packQ4: out of memory");
  w->k = (int32_t)k, w->n = (int32_t)n, w->np = (int32_t)((n + 15) & ~15), w->nb = (int32_t)nb;
  int half = 1;
  uint16_t h;
  for (int64_t i = 0; i < n * nb && half; i++) half = half_exact(((const float *)scales)[i], &h);
  const size_t scale_size = half ? sizeof(uint16_t) : sizeof(float);
  w->packed = alloc64((size_t)w->np * nb * 16);
  if (half) w->sh = alloc64((size_t)w->np * nb * scale_size);
  else w->sw = alloc64((size_t)w->np * nb * scale_size);
  if (!w->packed || (!w->sw && !w->sh)) {
    free(w->packed), free(w->sw), free(w->sh), free(w);
    napi_throw_range_error(env, NULL, "packQ4: out of memory");
    return NULL;
  }
  w->bytes = (int64_t)w->np * nb * (int64_t)(16 + scale_size);
  pack(w, b, scales);
  return wrap_packed(env, w, w->bytes, finalize_packed, &PACKED_TAG);
}

// packedBytes(w): the bytes a 4-bit product's repacked weights and scales take (what a product reads).
static napi_value packed_bytes(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) return throw_type(env, "packedBytes(w)");
  const Packed *w = get_tagged(env, argv[0], &PACKED_TAG);
  if (!w) return throw_type(env, "packedBytes: w must come from packQ4");
  napi_create_int64(env, w->bytes, &out);
  return out;
}

static napi_value matmul_q4(napi_env env, napi_callback_info info) {
  Args a;
  Packed *w = product_args(env, info, &PACKED_TAG, "matmulQ4", "packQ4", &a);
  if (!w) return NULL;
  const int64_t m = a.m, threads = a.threads;
  void *x = a.x, *y = a.y;
  const bool portable = a.portable;

  const size_t nb = (size_t)w->nb;
  const Path path = path_for(portable);
  int8_t *q = malloc((size_t)m * w->k);
  float *sa = malloc((size_t)m * nb * sizeof(float)), *c = malloc((size_t)m * nb * sizeof(float));
  const bool chunks4 = path.rows4_bytes && m >= 3;
  void *rows4 = chunks4 ? malloc(path.rows4_bytes(w->k) * (size_t)((m + 3) / 4)) : NULL;
  if (!q || !sa || !c || (chunks4 && !rows4)) {
    free(q), free(sa), free(c), free(rows4);
    napi_throw_range_error(env, NULL, "matmulQ4: out of memory");
    return NULL;
  }
  const GroupFn fn = path.q4;
  const QuantFn quant = path.quant;
  for (int64_t r = 0; r < m; r++) quant((const float *)x + r * w->k, w->k, q + r * w->k, sa + r * nb, c + r * nb);
  if (rows4) path.rows4(q, sa, c, (int)m, w->k, rows4);
  const Job job = {w, (int32_t)m, q, sa, c, y, rows4};
  run_job(&job, w->np / 16, job.m, w->nb, q4_segment(w->nb), fn, path.q4_pair, few_threads(w->bytes, m, (int)threads, path.alone));
  free(q), free(sa), free(c), free(rows4);
  return NULL;
}

// mlpQ4(gate, up, down, x, m, y, threads, portable?): x and y [m][hidden]; gate and up [hidden -> inter], down
// [inter -> hidden]. x is quantized once for both gate and up; h = silu(g) * u is quantized as down's activations
// (per block of 32, as ONNX Runtime's MatMulNBits at level 4 does with the Mul's output). Two passes over the
// columns, each on threads made for it: gate and up together (h done per group), then down.
// The arguments of mlpQ4 and mlpQ8 (gate, up, down, x, m, y, threads, portable?, sets?), checked: the weights by
// their tag (both layouts begin with k and n), x and y [m][hidden]. 0 where a TypeError was thrown.
typedef struct {
  void *gate, *up, *down, *x, *y;
  int64_t m, threads, sets;
  bool portable;
} MlpArgs;

static int mlp_args(napi_env env, napi_callback_info info, const napi_type_tag *tag, const char *name, const char *packer, MlpArgs *a) {
  char msg[160];
  size_t argc = 9;
  napi_value argv[9];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 7) {
    snprintf(msg, sizeof msg, "%s(gate, up, down, x, m, y, threads, portable?, sets?)", name);
    return throw_type(env, msg), 0;
  }
  void **ws[3] = {&a->gate, &a->up, &a->down};
  static const char *const names[3] = {"gate", "up", "down"};
  for (int i = 0; i < 3; i++)
    if (!(*ws[i] = get_tagged(env, argv[i], tag))) return snprintf(msg, sizeof msg, "%s: %s must come from %s", name, names[i], packer), throw_type(env, msg), 0;
  const int32_t *g = a->gate, *u = a->up, *d = a->down;
  if (u[0] != g[0] || u[1] != g[1]) return snprintf(msg, sizeof msg, "%s: gate and up must have the same k and n", name), throw_type(env, msg), 0;
  if (d[0] != g[1] || d[1] != g[0]) return snprintf(msg, sizeof msg, "%s: down must be [gate's n -> gate's k]", name), throw_type(env, msg), 0;
  size_t xlen, ylen;
  const struct { napi_value v; void **data; size_t *len; const char *what; } arrays[2] = {{argv[3], &a->x, &xlen, "x"}, {argv[5], &a->y, &ylen, "y"}};
  for (int i = 0; i < 2; i++) {
    snprintf(msg, sizeof msg, "%s: %s must be a Float32Array", name, arrays[i].what);
    if (!get_typed(env, arrays[i].v, napi_float32_array, arrays[i].data, arrays[i].len, msg)) return 0;
  }
  snprintf(msg, sizeof msg, "%s: m must be a whole number >= 1", name);
  if (!get_int(env, argv[4], 1, INT32_MAX, &a->m, msg)) return 0;
  snprintf(msg, sizeof msg, "%s: threads must be a whole number from 1 to 1024", name);
  if (!get_int(env, argv[6], 1, 1024, &a->threads, msg)) return 0;
  snprintf(msg, sizeof msg, "%s: portable must be a boolean", name);
  if (!get_portable(env, argv, argc, 7, &a->portable, msg)) return 0;
  if (!get_sets(env, argv, argc, 8, a->m, &a->sets, name)) return 0;
  const uint64_t size = (uint64_t)a->m * (uint64_t)g[0];
  if ((uint64_t)xlen != size) return snprintf(msg, sizeof msg, "%s: x must hold m * hidden values", name), throw_type(env, msg), 0;
  if ((uint64_t)ylen != size) return snprintf(msg, sizeof msg, "%s: y must hold m * hidden values", name), throw_type(env, msg), 0;
  return 1;
}

static napi_value mlp_q4(napi_env env, napi_callback_info info) {
  MlpArgs a;
  if (!mlp_args(env, info, &PACKED_TAG, "mlpQ4", "packQ4", &a)) return NULL;
  const Packed *gate = a.gate, *up = a.up, *down = a.down;
  void *x = a.x, *y = a.y;
  const int64_t threads = a.threads;
  const bool portable = a.portable;
  const size_t hidden = (size_t)gate->k, inter = (size_t)gate->n, rows = (size_t)a.m;

  // the rows go through the whole MLP ROW_BLOCK at a time, so that g, u and h stay in the core's own caches
  // (a prompt's whole g and u went out to memory and back: 1,024 rows ran at ~155 G MAC/s against ~210 for 64).
  // One scratch block: g (then h) and u [block][inter], x's and h's scales and corrections, x's and h's codes, and
  // (3 or more rows where the path has it) x's and h's values in its rows4 layout
  const size_t nbx = hidden / 32, nbh = inter / 32, block = rows < ROW_BLOCK ? rows : ROW_BLOCK;
  const Path path = path_for(portable);
  const int rows4 = path.rows4_bytes && rows >= 3;
  const size_t floats = block * (2 * inter + 2 * nbx + 2 * nbh), r4x = rows4 ? path.rows4_bytes((int)hidden) * ((block + 3) / 4) : 0;
  const size_t r4h = rows4 ? path.rows4_bytes((int)inter) * ((block + 3) / 4) : 0;
  float *scratch = malloc(floats * sizeof(float) + block * (hidden + inter) + r4x + r4h);
  if (!scratch) {
    napi_throw_range_error(env, NULL, "mlpQ4: out of memory");
    return NULL;
  }
  float *g = scratch, *u = g + block * inter, *sx = u + block * inter, *cx = sx + block * nbx, *sh = cx + block * nbx, *ch = sh + block * nbh;
  int8_t *qx = (int8_t *)(scratch + floats), *qh = qx + block * hidden;
  void *x4 = rows4 ? (void *)(qh + block * inter) : NULL, *h4 = rows4 ? (void *)((uint8_t *)x4 + r4x) : NULL;
  const GroupFn fn = path.q4;
  const SiluMulFn silu_mul = path.silu_mul;
  const QuantFn quant = path.quant;
  for (size_t r0 = 0; r0 < rows; r0 += block) {
    const size_t n = rows - r0 < block ? rows - r0 : block;
    const float *xb = (const float *)x + r0 * hidden;
    for (size_t r = 0; r < n; r++) quant(xb + r * hidden, (int)hidden, qx + r * hidden, sx + r * nbx, cx + r * nbx);
    if (x4) path.rows4(qx, sx, cx, (int)n, (int)hidden, x4);
    const Job gj = {gate, (int32_t)n, qx, sx, cx, g, x4}, uj = {up, (int32_t)n, qx, sx, cx, u, x4};
    const MlpJob first = {&gj, &uj, g, u, (int)inter, fn, path.q4_pair, silu_mul};
    run_job(&first, gate->np / 16, (int)n, gate->nb, 0, group_mlp, NULL, (int)threads);
    for (size_t r = 0; r < n; r++) quant(g + r * inter, (int)inter, qh + r * inter, sh + r * nbh, ch + r * nbh);
    if (h4) path.rows4(qh, sh, ch, (int)n, (int)inter, h4);
    const Job second = {down, (int32_t)n, qh, sh, ch, (float *)y + r0 * hidden, h4};
    run_job(&second, down->np / 16, (int)n, down->nb, q4_segment(down->nb), fn, path.q4_pair, (int)threads);
  }
  free(scratch);
  return NULL;
}

static void finalize_packed8(napi_env env, void *data, void *hint) {
  (void)hint;
  Packed8 *w = data;
  int64_t left;
  napi_adjust_external_memory(env, -w->bytes, &left);
  free(w->packed);
  free(w->wsum);
  free(w->sw);
  free(w);
}

static napi_value pack_q8(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5) {
    return throw_type(env, "packQ8(w, scales, k, n, zeroPoint)");
  }
  int64_t k, n, zp;
  if (!get_int(env, argv[2], 1, INT32_MAX - 3, &k, "packQ8: k must be a whole number >= 1")) return NULL;
  if (!get_int(env, argv[3], 1, INT32_MAX - 15, &n, "packQ8: n must be a whole number >= 1")) return NULL;
  if (!get_int(env, argv[4], -128, 127, &zp, "packQ8: zeroPoint must be a whole number from -128 to 127")) return NULL;
  void *b, *scales;
  size_t blen, slen;
  if (!get_typed(env, argv[0], napi_int8_array, &b, &blen, "packQ8: w must be an Int8Array")) return NULL;
  if (!get_typed(env, argv[1], napi_float32_array, &scales, &slen, "packQ8: scales must be a Float32Array")) return NULL;
  if ((uint64_t)blen != (uint64_t)k * (uint64_t)n) return throw_type(env, "packQ8: w must hold k * n values");
  if ((int64_t)slen != n) return throw_type(env, "packQ8: scales must hold n values");
  if (zp != 0) {
    const int8_t *wb = b;
    for (size_t i = 0; i < blen; i++)
      if (wb[i] - zp < -128 || wb[i] - zp > 127) return throw_type(env, "packQ8: every w - zeroPoint must fit in int8");
  }
  Packed8 *w = calloc(1, sizeof *w);
  if (!w) return throw_type(env, "packQ8: out of memory");
  w->k = (int32_t)k, w->n = (int32_t)n, w->kp = (int32_t)((k + 3) & ~3), w->np = (int32_t)((n + 15) & ~15);
  w->packed = alloc64((size_t)w->np * w->kp);
  w->wsum = alloc64((size_t)w->np * sizeof(int32_t));
  w->sw = alloc64((size_t)w->np * sizeof(float));
  if (!w->packed || !w->wsum || !w->sw) {
    free(w->packed), free(w->wsum), free(w->sw), free(w);
    napi_throw_range_error(env, NULL, "packQ8: out of memory");
    return NULL;
  }
  w->bytes = (int64_t)w->np * (w->kp + sizeof(int32_t) + sizeof(float));
  pack8(w, b, scales, (int)zp);
  return wrap_packed(env, w, w->bytes, finalize_packed8, &PACKED8_TAG);
}

static napi_value matmul_q8(napi_env env, napi_callback_info info) {
  Args a;
  Packed8 *w = product_args(env, info, &PACKED8_TAG, "matmulQ8", "packQ8", &a);
  if (!w) return NULL;
  const int64_t m = a.m, threads = a.threads;
  void *x = a.x, *y = a.y;
  const bool portable = a.portable;

  const Path path = path_for(portable);
  void *q = malloc((size_t)m * w->kp * path.q8_width);
  float *sa = malloc((size_t)m * sizeof(float));
  int32_t *zp = malloc((size_t)m * sizeof(int32_t));
  if (!q || !sa || !zp) {
    free(q), free(sa), free(zp);
    napi_throw_range_error(env, NULL, "matmulQ8: out of memory");
    return NULL;
  }
  const Job8 job = {w, (int32_t)m, q, sa, zp, y};
  quant8_sets(&path, x, m, w->k, w->kp, q, a.sets, sa, zp);
  run_job8(&job, path.q8, m == 1 ? path.q8_pair : NULL, few_threads(w->bytes, m, (int)threads, path.alone));
  free(q), free(sa), free(zp);
  return NULL;
}

// mlpQ8(gate, up, down, x, m, y, threads, portable?, sets?): mlpQ4's MLP of 8-bit products, as ONNX Runtime runs
// a q8 graph's (DynamicQuantizeLinear, MatMulInteger, Cast, Mul for each product; Sigmoid, Mul, Mul): x quantized
// once for gate and up (the same DynamicQuantizeLinear of the same x), h = silu(g) * u quantized for down. The
// quantization takes one scale over each set of rows (the whole tensor by default), so all m rows go through
// each pass together.
static napi_value mlp_q8(napi_env env, napi_callback_info info) {
  MlpArgs a;
  if (!mlp_args(env, info, &PACKED8_TAG, "mlpQ8", "packQ8", &a)) return NULL;
  const Packed8 *gate = a.gate, *up = a.up, *down = a.down;
  void *x = a.x, *y = a.y;
  const int64_t m = a.m, threads = a.threads;
  const bool portable = a.portable;
  const size_t hidden = (size_t)gate->k, inter = (size_t)gate->n, rows = (size_t)m;
  const Path path = path_for(portable);
  float *g = malloc(2 * rows * inter * sizeof(float)), *sa = malloc(2 * rows * sizeof(float));
  int32_t *zp = malloc(2 * rows * sizeof(int32_t));
  void *qx = malloc(rows * (size_t)gate->kp * path.q8_width), *qh = malloc(rows * (size_t)down->kp * path.q8_width);
  if (!g || !sa || !zp || !qx || !qh) {
    free(g), free(sa), free(zp), free(qx), free(qh);
    napi_throw_range_error(env, NULL, "mlpQ8: out of memory");
    return NULL;
  }
  float *u = g + rows * inter;
  const GroupFn fn = path.q8;
  const SiluMulFn silu_mul = path.silu_mul;
  const Job8 gj = {gate, (int32_t)m, qx, sa, zp, g};
  quant8_sets(&path, x, m, (int)hidden, gate->kp, qx, a.sets, sa, zp);
  const Job8 uj = {up, (int32_t)m, qx, sa, zp, u};
  if (m <= 4) {
    const MlpJob first = {&gj, &uj, g, u, (int)inter, fn, m == 1 ? path.q8_pair : NULL, silu_mul};
    run_job(&first, gate->np / 16, (int)m, 1, 0, group_mlp, NULL, (int)threads);
  } else {
    // a prompt's rows: each product on its own, so that a group's weights stay in the core's first cache while
    // the row block's activations stream past them (gate's and up's together left it: 246 against 320 G MAC/s
    // for 82 rows of a 0.5B MLP)
    run_job8(&gj, fn, NULL, (int)threads);
    run_job8(&uj, fn, NULL, (int)threads);
    for (size_t i = 0; i < rows * inter; i += 16) silu_mul(g + i, u + i, rows * inter - i < 16 ? (int)(rows * inter - i) : 16);
  }
  const Job8 dj = {down, (int32_t)m, qh, sa + rows, zp + rows, y};
  quant8_sets(&path, g, m, (int)inter, down->kp, qh, a.sets, sa + rows, zp + rows);
  run_job8(&dj, fn, m == 1 ? path.q8_pair : NULL, (int)threads);
  free(g), free(sa), free(zp), free(qx), free(qh);
  return NULL;
}

// --- The small steps between a layer's products: RMSNorm, residual sums, biases ---

static const napi_typedarray_type FLOATS[5] = {napi_float32_array, napi_float32_array, napi_float32_array, napi_float32_array, napi_float32_array};

// rmsNorm(x, w, epsilon, y, portable?): each row of x (rows of w.length values) into y.
static napi_value rms_norm(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4) return throw_type(env, "rmsNorm(x, w, epsilon, y, portable?)");
  static const int at[3] = {0, 1, 3};
  static const char *const names[3] = {"x", "w", "y"};
  void *data[3];
  size_t len[3];
  double eps;
  bool portable;
  if (!get_arrays(env, argv, "rmsNorm", 3, at, names, FLOATS, data, len)) return NULL;
  if (napi_get_value_double(env, argv[2], &eps) != napi_ok) return throw_type(env, "rmsNorm: epsilon must be a number");
  if (!get_portable(env, argv, argc, 4, &portable, "rmsNorm: portable must be a boolean")) return NULL;
  const size_t xlen = len[0], wlen = len[1];
  if (!wlen || wlen % 8 || xlen % wlen || len[2] != xlen) return throw_type(env, "rmsNorm: w must hold a multiple of 8 values, x whole rows of them, y as many as x");
  const Path path = path_for(portable);
  for (size_t r = 0; r < xlen; r += wlen) path.rms_norm((const float *)data[0] + r, data[1], (int)wlen, (float)eps, (float *)data[2] + r);
  return NULL;
}

// addRmsNorm(a, b, w, epsilon, sum, y, portable?): sum = a + b, element by element, and each row of sum (rows of
// w.length values) normalized into y, as addInto then rmsNorm give them: a layer's residual sum and the norm that
// reads it, in one call.
static napi_value add_rms_norm(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 6) return throw_type(env, "addRmsNorm(a, b, w, epsilon, sum, y, portable?)");
  static const int at[5] = {0, 1, 2, 4, 5};
  static const char *const names[5] = {"a", "b", "w", "sum", "y"};
  void *data[5];
  size_t len[5];
  double eps;
  bool portable;
  if (!get_arrays(env, argv, "addRmsNorm", 5, at, names, FLOATS, data, len)) return NULL;
  if (napi_get_value_double(env, argv[3], &eps) != napi_ok) return throw_type(env, "addRmsNorm: epsilon must be a number");
  if (!get_portable(env, argv, argc, 6, &portable, "addRmsNorm: portable must be a boolean")) return NULL;
  const size_t n = len[0], wlen = len[2];
  if (!wlen || wlen % 8 || n % wlen || len[1] != n || len[3] != n || len[4] != n)
    return throw_type(env, "addRmsNorm: w must hold a multiple of 8 values, a whole rows of them, b, sum and y as many as a");
  const float *pa = data[0], *pb = data[1];
  float *sum = data[3], *y = data[4];
  for (size_t i = 0; i < n; i++) sum[i] = pa[i] + pb[i];
  const Path path = path_for(portable);
  for (size_t r = 0; r < n; r += wlen) path.rms_norm(sum + r, data[2], (int)wlen, (float)eps, y + r);
  return NULL;
}

// addInto(a, b, y): y = a + b, element by element; b may be shorter, one row of a's (a bias), repeated.
static napi_value add_into(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) return throw_type(env, "addInto(a, b, y)");
  static const int at[3] = {0, 1, 2};
  static const char *const names[3] = {"a", "b", "y"};
  void *data[3];
  size_t len[3];
  if (!get_arrays(env, argv, "addInto", 3, at, names, FLOATS, data, len)) return NULL;
  const size_t alen = len[0], blen = len[1];
  if (!blen || alen % blen || len[2] != alen) return throw_type(env, "addInto: b must hold a's values or whole rows of them, y as many as a");
  const float *pa = data[0], *pb = data[1];
  float *py = data[2];
  for (size_t r = 0; r < alen; r += blen)
    for (size_t j = 0; j < blen; j++) py[r + j] = pa[r + j] + pb[j];
  return NULL;
}

// The units of an attention (attention.c), spread over threads as a product's column groups are.
typedef struct {
  const Attention *a;
  int simd; // ATTENTION_*
  int failed;
} AttentionJob;

static void attention_units(const void *arg, int g, int r0, int rows, int b0, int b1) {
  (void)r0, (void)rows, (void)b0, (void)b1;
  AttentionJob *job = (AttentionJob *)arg;
  if (svc_attention_unit(job->a, job->simd, g, NULL)) __atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
}

// attention(q, k, v, pos, cos, sin, pastK, pastV, mask, out, newK, newV, s, heads, kvHeads, headSize, divisor,
// threads, portable?): a layer's attention for s new positions of each row (attention.c); the row count and the
// cached length follow from the arrays' lengths, which must agree with each other.
static napi_value attention(napi_env env, napi_callback_info info) {
  size_t argc = 19;
  napi_value argv[19];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 18)
    return throw_type(env, "attention(q, k, v, pos, cos, sin, pastK, pastV, mask, out, newK, newV, s, heads, kvHeads, headSize, divisor, threads, portable?)");
  static const int at[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  static const char *const names[12] = {"q", "k", "v", "pos", "cos", "sin", "pastK", "pastV", "mask", "out", "newK", "newV"};
  napi_typedarray_type types[12];
  for (int i = 0; i < 12; i++) types[i] = i == 3 ? napi_bigint64_array : napi_float32_array;
  void *data[12];
  size_t len[12];
  if (!get_arrays(env, argv, "attention", 12, at, names, types, data, len)) return NULL;
  int64_t s, heads, kv, d;
  double divisor;
  if (!get_int(env, argv[12], 1, INT32_MAX, &s, "attention: s must be a positive whole number") ||
      !get_int(env, argv[13], 1, 4096, &heads, "attention: heads must be a whole number in 1..4096") ||
      !get_int(env, argv[14], 1, 4096, &kv, "attention: kvHeads must be a whole number in 1..4096") ||
      !get_int(env, argv[15], 2, 4096, &d, "attention: headSize must be a whole number in 2..4096"))
    return NULL;
  if (napi_get_value_double(env, argv[16], &divisor) != napi_ok) return throw_type(env, "attention: divisor must be a number");
  int64_t threads;
  if (!get_int(env, argv[17], 1, 1024, &threads, "attention: threads must be a whole number in 1..1024")) return NULL;
  bool portable;
  if (!get_portable(env, argv, argc, 18, &portable, "attention: portable must be a boolean")) return NULL;
  const int64_t rows = (int64_t)len[3] / s, kw = kv * d;
  if (heads % kv || d % 2 || len[3] % s || !rows || len[0] != (size_t)(rows * s * heads * d) || len[1] != (size_t)(rows * s * kw) ||
      len[2] != len[1] || len[4] % (d / 2) || len[5] != len[4] || len[6] % (rows * kw) || len[7] != len[6] || len[9] != len[0] ||
      len[10] != len[1] || len[11] != len[1])
    return throw_type(env, "attention: the arrays' lengths do not agree with s, heads, kvHeads and headSize");
  const int64_t p = (int64_t)len[6] / (rows * kw);
  if (len[8] != (size_t)(rows * s * (p + s))) return throw_type(env, "attention: mask must hold s × (past + s) values a row");
  const Attention a = {
    .b = (int32_t)rows, .s = (int32_t)s, .p = (int32_t)p, .heads = (int32_t)heads, .kv_heads = (int32_t)kv, .head_size = (int32_t)d,
    .rope_rows = (int32_t)(len[4] / (d / 2)), .q = data[0], .k = data[1], .v = data[2], .pos = data[3], .cos = data[4],
    .sin = data[5], .past_k = data[6], .past_v = data[7], .mask = data[8], .divisor = (float)divisor, .out = data[9],
    .new_k = data[10], .new_v = data[11],
  };
  if (svc_attention_prepare(&a)) {
    napi_throw_range_error(env, NULL, "attention: a position is outside the rotary caches");
    return NULL;
  }
  const int simd = portable ? ATTENTION_PLAIN : cpu_path == PATH_VNNI ? ATTENTION_AVX512 : cpu_path == PATH_AVX2 ? ATTENTION_AVX2 : ATTENTION_PLAIN;
  AttentionJob job = {&a, simd, 0};
  // a unit costs ~20 ns a cached position (one of d = 64, 7 query heads): a short context's units are done before
  // the kept threads would have taken theirs (each call handed to them cost ~10 µs more at 64 positions)
  const int units = (int)(rows * s * kv);
  run_job(&job, units, 1, 1, 0, attention_units, NULL, (int64_t)units * (p + s) < 2048 ? 1 : (int)threads);
  if (job.failed) napi_throw_error(env, NULL, "attention: out of memory");
  return NULL;
}

// rest(): the pool's spinning workers go to sleep now (other threads are about to need the cores), until the
// next call wakes them.
static napi_value rest(napi_env env, napi_callback_info info) {
  (void)env, (void)info;
  __atomic_store_n(&pool.resting, 1, __ATOMIC_RELAXED);
  return NULL;
}

static napi_value kernel_path(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value s;
  napi_create_string_utf8(env, PATH_NAMES[cpu_path], NAPI_AUTO_LENGTH, &s);
  return s;
}
// The index of x's largest value, its first, NaN never chosen; -1 where nothing is above -infinity.
static int64_t argmax_plain(const float *x, int64_t n) {
  float max = -INFINITY;
  for (int64_t i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
  if (max == -INFINITY) return -1;
  for (int64_t i = 0; i < n; i++)
    if (x[i] == max) return i;
  return -1;
}

// argmax(x, portable?): the index of x's largest value (its first; NaN never chosen), 0 where nothing is above
// -infinity, as sampling.ts's argmax: a greedy step's choice over a vocabulary's logits, in one vectorized pass
// and a find.
static napi_value argmax(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) return throw_type(env, "argmax(x, portable?)");
  static const int at[1] = {0};
  static const char *const names[1] = {"x"};
  void *data[1];
  size_t len[1];
  bool portable;
  if (!get_arrays(env, argv, "argmax", 1, at, names, FLOATS, data, len) ||
      !get_portable(env, argv, argc, 1, &portable, "argmax: portable must be a boolean"))
    return NULL;
#if defined(__x86_64__)
  const int64_t i = !portable && cpu_path != PATH_PORTABLE ? svc_argmax_avx2(data[0], (int64_t)len[0]) : argmax_plain(data[0], (int64_t)len[0]);
#else
  (void)portable;
  const int64_t i = argmax_plain(data[0], (int64_t)len[0]);
#endif
  napi_value r;
  napi_create_int64(env, i < 0 ? 0 : i, &r);
  return r;
}

// weigh(data, max, floor, inv, w, frac, at?, mass?, portable?): sampling.ts's weighEach, bit for bit (weigh.c):
// each logit's weight into w (a Float64Array as long as data), with at (Uint16Array) and mass (Float64Array of
// the buckets) each candidate's bucket and each bucket's weight; returns the weights' sum. `portable`: the
// plain-C steps, not AVX2's (the same bits; tests compare the two).
static napi_value weigh(napi_env env, napi_callback_info info) {
  size_t argc = 9;
  napi_value argv[9];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 6) {
    return throw_type(env, "weigh(data, max, floor, inv, w, frac, at?, mass?, portable?)");
  }
  static const int at[5] = {0, 4, 5, 6, 7};
  static const char *const names[5] = {"data", "w", "frac", "at", "mass"};
  static const napi_typedarray_type types[5] = {napi_float32_array, napi_float64_array, napi_float64_array, napi_uint16_array,
                                                napi_float64_array};
  void *data[5] = {NULL};
  size_t len[5] = {0};
  double num[3];
  for (int i = 0; i < 3; i++)
    if (napi_get_value_double(env, argv[1 + i], &num[i]) != napi_ok) return throw_type(env, "weigh: max, floor and inv must be numbers");
  napi_valuetype vt = napi_undefined;
  if (argc >= 7) napi_typeof(env, argv[6], &vt);
  const bool bucketed = vt != napi_undefined; // at and mass given
  bool portable;
  if (bucketed && argc < 8) return throw_type(env, "weigh: at and mass go together");
  if (!get_arrays(env, argv, "weigh", bucketed ? 5 : 3, at, names, types, data, len) ||
      !get_portable(env, argv, argc, 8, &portable, "weigh: portable must be a boolean")) {
    return NULL;
  }
  const size_t n = len[0], buckets = len[4];
  if (len[1] < n || len[2] != 256 || (bucketed && (len[3] < n || buckets < 1 || buckets > 65535))) {
    return throw_type(env, "weigh: w and at as long as data, frac of 256, mass of 1 to 65535 buckets");
  }
  const double z = svc_weigh(data[0], (int64_t)n, num[0], num[1], num[2], data[2], data[1], data[3], data[4], (int)buckets,
                             !portable && cpu_path != PATH_PORTABLE);
  napi_value r;
  napi_create_double(env, z, &r);
  return r;
}

// bucketMembers(at, b, members): the indices of at (a Uint16Array) equal to b, in order, into members (an Int32Array
// as long as at); returns how many. Top-p's look into the bucket where the nucleus ends (sampling.ts).
static napi_value bucket_members(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  static const int at[2] = {0, 2};
  static const char *const names[2] = {"at", "members"};
  static const napi_typedarray_type types[2] = {napi_uint16_array, napi_int32_array};
  void *data[2];
  size_t len[2];
  int32_t b;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) return throw_type(env, "bucketMembers(at, b, members)");
  if (!get_arrays(env, argv, "bucketMembers", 2, at, names, types, data, len)) return NULL;
  if (napi_get_value_int32(env, argv[1], &b) != napi_ok || len[1] < len[0]) {
    return throw_type(env, "bucketMembers: b a number, members as long as at");
  }
  napi_value r;
  napi_create_int64(env, svc_bucket_members(data[0], (int64_t)len[0], b, data[1]), &r);
  return r;
}

// drawKept(data, w, endVal, endIdx, r): sampling.ts's draw over the kept tokens, bit for bit (weigh.c): the token
// where r less the kept weights in index order reaches 0, else the last kept one, -1 where none is.
static napi_value draw_kept(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  static const int at[2] = {0, 1};
  static const char *const names[2] = {"data", "w"};
  static const napi_typedarray_type types[2] = {napi_float32_array, napi_float64_array};
  void *data[2];
  size_t len[2];
  double num[3];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5) return throw_type(env, "drawKept(data, w, endVal, endIdx, r)");
  if (!get_arrays(env, argv, "drawKept", 2, at, names, types, data, len)) return NULL;
  for (int i = 0; i < 3; i++)
    if (napi_get_value_double(env, argv[2 + i], &num[i]) != napi_ok) return throw_type(env, "drawKept: endVal, endIdx and r must be numbers");
  if (len[1] < len[0]) return throw_type(env, "drawKept: w as long as data");
  napi_value r;
  napi_create_int64(env, svc_draw_kept(data[0], data[1], (int64_t)len[0], num[0], num[1], num[2]), &r);
  return r;
}

NAPI_MODULE_INIT() {
  cpu_path = cpu_has_vnni() ? PATH_VNNI : PATH_PORTABLE;
#if defined(__x86_64__)
  if (cpu_path == PATH_PORTABLE && svc_has_avx2()) cpu_path = PATH_AVX2;
#endif
  const napi_property_descriptor props[] = {
    {"packQ4", NULL, pack_q4, NULL, NULL, NULL, napi_enumerable, NULL},
    {"matmulQ4", NULL, matmul_q4, NULL, NULL, NULL, napi_enumerable, NULL},
    {"packedBytes", NULL, packed_bytes, NULL, NULL, NULL, napi_enumerable, NULL},
    {"mlpQ4", NULL, mlp_q4, NULL, NULL, NULL, napi_enumerable, NULL},
    {"packQ8", NULL, pack_q8, NULL, NULL, NULL, napi_enumerable, NULL},
    {"matmulQ8", NULL, matmul_q8, NULL, NULL, NULL, napi_enumerable, NULL},
    {"mlpQ8", NULL, mlp_q8, NULL, NULL, NULL, napi_enumerable, NULL},
    {"rmsNorm", NULL, rms_norm, NULL, NULL, NULL, napi_enumerable, NULL},
    {"addInto", NULL, add_into, NULL, NULL, NULL, napi_enumerable, NULL},
    {"addRmsNorm", NULL, add_rms_norm, NULL, NULL, NULL, napi_enumerable, NULL},
    {"argmax", NULL, argmax, NULL, NULL, NULL, napi_enumerable, NULL},
    {"weigh", NULL, weigh, NULL, NULL, NULL, napi_enumerable, NULL},
    {"bucketMembers", NULL, bucket_members, NULL, NULL, NULL, napi_enumerable, NULL},
    {"drawKept", NULL, draw_kept, NULL, NULL, NULL, napi_enumerable, NULL},
    {"attention", NULL, attention, NULL, NULL, NULL, napi_enumerable, NULL},
    {"rest", NULL, rest, NULL, NULL, NULL, napi_enumerable, NULL},
    {"kernelPath", NULL, kernel_path, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof *props, props) != napi_ok) return NULL;
  return exports;
}

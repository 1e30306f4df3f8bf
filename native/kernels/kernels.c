// 4-bit matrix products for ONNX Runtime's MatMulNBits layout (bits=4, block_size=32, symmetric: zero point 8),
// with activations quantized per block of 32 to int8 as ONNX Runtime does at accuracy_level 4. The weights are
// repacked once so that, on AVX-512 VNNI, each 32-bit lane of one register accumulates one column's block.
// A plain-C path does the same integer sums and the same fused float steps, so both give identical bits.
// Also 8-bit products for the q8 graphs' DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul pattern (int8
// weights [K][N] with one scale per column), quantizing the activations to uint8 as ONNX Runtime does.
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma")))
#endif

// Weights repacked per group of 16 columns, per block b, 4 steps of 64 bytes: lane j (column j) holds codes
// 4s..4s+3 of its block in the low nibbles and codes 16+4s..16+4s+3 in the high ones. Scales as
// [group][block][16]. np is n padded to 16 (zero codes, zero scales).
typedef struct {
  int32_t k, n, np, nb;
  uint8_t *packed;
  float *sw;
  int64_t bytes;
} Packed;

// One product's activations, quantized: q [m][k] int8, sa [m][nb] scales, c [m][nb] = 8 * scale * sum(q).
typedef struct {
  const Packed *w;
  int32_t m;
  const int8_t *q;
  const float *sa, *c;
  float *y;
} Job;

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
        w->sw[((size_t)g * nb + bl) * 16 + j] = col < w->n ? scales[(size_t)col * nb + bl] : 0.f;
      }
    }
}

// lrintf rounds half to even in the default rounding mode, as the x64 conversion ONNX Runtime uses does.
static void quant_row(const float *x, int k, int8_t *q, float *sa, float *c) {
  for (int b = 0; b < k / 32; b++) {
    const float *xb = x + (size_t)b * 32;
    float amax = 0;
    for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(xb[i]));
    const float s = amax / 127.f, inv = s != 0.f ? 1.f / s : 0.f;
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

// Group g (16 columns), rows [r0, r0 + rows), rows <= 4. Codes are unsigned (0..15): the integer sum is
// sum(code * q), and sa * sum - c takes the implicit zero point 8 back out.
static void group_portable(const void *arg, int g, int r0, int rows) {
  const Job *job = arg;
  const Packed *w = job->w;
  const int nb = w->nb;
  const uint8_t *p = w->packed + (size_t)g * 16 * nb * 16;
  const float *sw = w->sw + (size_t)g * 16 * nb;
  float acc[4][16] = {{0}};
  for (int b = 0; b < nb; b++, p += 256) {
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
        acc[r][j] = fmaf(sw[(size_t)b * 16 + j], fmaf(sa, (float)s, -c), acc[r][j]);
      }
    }
  }
  const int n0 = g * 16, cols = w->n - n0 < 16 ? w->n - n0 : 16;
  for (int r = 0; r < rows; r++) memcpy(job->y + (size_t)(r0 + r) * w->n + n0, acc[r], (size_t)cols * sizeof(float));
}

#if defined(__x86_64__)
// rows is a constant in each caller (group_vnni), so the accumulators stay in registers
VNNI_TARGET static inline __attribute__((always_inline)) void group_vnni_rows(const Job *job, int g, int r0, const int rows) {
  const Packed *w = job->w;
  const int nb = w->nb;
  const uint8_t *p = w->packed + (size_t)g * 16 * nb * 16;
  const float *sw = w->sw + (size_t)g * 16 * nb;
  const __m512i mask = _mm512_set1_epi8(15);
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int b = 0; b < nb; b++, p += 256) {
    // four blocks ahead: the weights stream from memory once, so their latency is what limits
    _mm_prefetch((const char *)(p + 1024), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 1088), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 1152), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 1216), _MM_HINT_T0);
    const __m512i w0 = _mm512_load_si512(p), w1 = _mm512_load_si512(p + 64);
    const __m512i w2 = _mm512_load_si512(p + 128), w3 = _mm512_load_si512(p + 192);
    const __m512i l0 = _mm512_and_si512(w0, mask), h0 = _mm512_and_si512(_mm512_srli_epi16(w0, 4), mask);
    const __m512i l1 = _mm512_and_si512(w1, mask), h1 = _mm512_and_si512(_mm512_srli_epi16(w1, 4), mask);
    const __m512i l2 = _mm512_and_si512(w2, mask), h2 = _mm512_and_si512(_mm512_srli_epi16(w2, 4), mask);
    const __m512i l3 = _mm512_and_si512(w3, mask), h3 = _mm512_and_si512(_mm512_srli_epi16(w3, 4), mask);
    const __m512 swv = _mm512_load_ps(sw + (size_t)b * 16);
    for (int r = 0; r < rows; r++) {
      int32_t a[8];
      memcpy(a, job->q + (size_t)(r0 + r) * w->k + (size_t)b * 32, sizeof a);
      __m512i s = _mm512_setzero_si512();
      s = _mm512_dpbusd_epi32(s, l0, _mm512_set1_epi32(a[0]));
      s = _mm512_dpbusd_epi32(s, l1, _mm512_set1_epi32(a[1]));
      s = _mm512_dpbusd_epi32(s, l2, _mm512_set1_epi32(a[2]));
      s = _mm512_dpbusd_epi32(s, l3, _mm512_set1_epi32(a[3]));
      s = _mm512_dpbusd_epi32(s, h0, _mm512_set1_epi32(a[4]));
      s = _mm512_dpbusd_epi32(s, h1, _mm512_set1_epi32(a[5]));
      s = _mm512_dpbusd_epi32(s, h2, _mm512_set1_epi32(a[6]));
      s = _mm512_dpbusd_epi32(s, h3, _mm512_set1_epi32(a[7]));
      const size_t i = (size_t)(r0 + r) * nb + b;
      const __m512 t = _mm512_fmsub_ps(_mm512_set1_ps(job->sa[i]), _mm512_cvtepi32_ps(s), _mm512_set1_ps(job->c[i]));
      acc[r] = _mm512_fmadd_ps(swv, t, acc[r]);
    }
  }
  const int n0 = g * 16, cols = w->n - n0 < 16 ? w->n - n0 : 16;
  const __mmask16 store = (__mmask16)((1u << cols) - 1);
  for (int r = 0; r < rows; r++) _mm512_mask_storeu_ps(job->y + (size_t)(r0 + r) * w->n + n0, store, acc[r]);
}

VNNI_TARGET static void group_vnni(const void *arg, int g, int r0, int rows) {
  const Job *job = arg;
  switch (rows) {
    case 4: group_vnni_rows(job, g, r0, 4); break;
    case 3: group_vnni_rows(job, g, r0, 3); break;
    case 2: group_vnni_rows(job, g, r0, 2); break;
    default: group_vnni_rows(job, g, r0, 1); break;
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

// W - w_zp repacked per group of 16 columns, per 4 consecutive k, 64 bytes: lane j (column j) holds rows
// 4s..4s+3 of its column, one vpdpbusd's operand. kp is k padded to 4 and np n padded to 16 (zero weights, zero
// scales). wsum [np] = sum over k of (W - w_zp): sum (q - zp)(W - w_zp) = sum q (W - w_zp) - zp * wsum.
typedef struct {
  int32_t k, n, kp, np;
  int8_t *packed;
  int32_t *wsum;
  float *sw;
  int64_t bytes;
} Packed8;

// One product's activations, quantized as DynamicQuantizeLinear does, all rows together: q [m][kp] uint8 (zeros
// past k), one scale sa and one zero point zp.
typedef struct {
  const Packed8 *w;
  int32_t m;
  const uint8_t *q;
  float sa;
  int32_t zp;
  float *y;
} Job8;

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
static void quant8(const float *x, int64_t m, int k, int kp, uint8_t *q, float *scale, int32_t *zp) {
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < m * k; i++) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
  }
  const float s = hi == lo ? 1.f : (hi - lo) / 255.f;
  const int z = (int)nearbyintf(fmaxf(0.f, fminf(255.f, 0.f - lo / s)));
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
  *scale = s;
  *zp = z;
}

// y = float(sum (q - zp)(W - w_zp)) * (sa * sw[col]): ONNX Runtime's int32 product, then its per-column multiplier.
static void group8_portable(const void *arg, int g, int r0, int rows) {
  const Job8 *job = arg;
  const Packed8 *w = job->w;
  const int steps = w->kp / 4, n0 = g * 16, cols = w->n - n0 < 16 ? w->n - n0 : 16;
  const int8_t *p = w->packed + (size_t)g * steps * 64;
  for (int r = 0; r < rows; r++) {
    const uint8_t *a = job->q + (size_t)(r0 + r) * w->kp;
    int32_t acc[16] = {0};
    for (int s = 0; s < steps; s++)
      for (int j = 0; j < 16; j++)
        for (int t = 0; t < 4; t++) acc[j] += a[4 * s + t] * p[(size_t)s * 64 + j * 4 + t];
    float *y = job->y + (size_t)(r0 + r) * w->n + n0;
    for (int j = 0; j < cols; j++) y[j] = (float)(acc[j] - job->zp * w->wsum[n0 + j]) * (job->sa * w->sw[n0 + j]);
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
  for (int r = 0; r < rows; r++) a[r] = job->q + (size_t)(r0 + r) * w->kp;
  __m512i acc0[4], acc1[4];
  for (int r = 0; r < rows; r++) acc0[r] = acc1[r] = _mm512_setzero_si512();
  int s = 0;
  for (; s + 4 <= steps; s += 4, p += 256) {
    // four steps of 4 ahead: the weights stream from memory once, so their latency is what limits
    _mm_prefetch((const char *)(p + 1024), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 1088), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 1152), _MM_HINT_T0);
    _mm_prefetch((const char *)(p + 1216), _MM_HINT_T0);
    const __m512i w0 = _mm512_load_si512(p), w1 = _mm512_load_si512(p + 64);
    const __m512i w2 = _mm512_load_si512(p + 128), w3 = _mm512_load_si512(p + 192);
    for (int r = 0; r < rows; r++) {
      int32_t v[4];
      memcpy(v, a[r] + (size_t)s * 4, sizeof v);
      acc0[r] = _mm512_dpbusd_epi32(acc0[r], _mm512_set1_epi32(v[0]), w0);
      acc1[r] = _mm512_dpbusd_epi32(acc1[r], _mm512_set1_epi32(v[1]), w1);
      acc0[r] = _mm512_dpbusd_epi32(acc0[r], _mm512_set1_epi32(v[2]), w2);
      acc1[r] = _mm512_dpbusd_epi32(acc1[r], _mm512_set1_epi32(v[3]), w3);
    }
  }
  for (; s < steps; s++, p += 64) {
    const __m512i w0 = _mm512_load_si512(p);
    for (int r = 0; r < rows; r++) {
      int32_t v;
      memcpy(&v, a[r] + (size_t)s * 4, sizeof v);
      acc0[r] = _mm512_dpbusd_epi32(acc0[r], _mm512_set1_epi32(v), w0);
    }
  }
  const int n0 = g * 16, cols = w->n - n0 < 16 ? w->n - n0 : 16;
  const __mmask16 store = (__mmask16)((1u << cols) - 1);
  const __m512i corr = _mm512_mullo_epi32(_mm512_load_si512(w->wsum + n0), _mm512_set1_epi32(job->zp));
  const __m512 mult = _mm512_mul_ps(_mm512_set1_ps(job->sa), _mm512_load_ps(w->sw + n0));
  for (int r = 0; r < rows; r++) {
    const __m512i t = _mm512_sub_epi32(_mm512_add_epi32(acc0[r], acc1[r]), corr);
    _mm512_mask_storeu_ps(job->y + (size_t)(r0 + r) * w->n + n0, store, _mm512_mul_ps(_mm512_cvtepi32_ps(t), mult));
  }
}

VNNI_TARGET static void group8_vnni(const void *arg, int g, int r0, int rows) {
  const Job8 *job = arg;
  switch (rows) {
    case 4: group8_vnni_rows(job, g, r0, 4); break;
    case 3: group8_vnni_rows(job, g, r0, 3); break;
    case 2: group8_vnni_rows(job, g, r0, 2); break;
    default: group8_vnni_rows(job, g, r0, 1); break;
  }
}
#endif

// One group of 16 columns of a product (a Job or a Job8), rows [r0, r0 + rows), rows <= 4.
typedef void (*GroupFn)(const void *job, int g, int r0, int rows);

typedef struct {
  const void *job;
  GroupFn fn;
  int m, g0, g1;
} Part;

// Group-outer, rows-inner: a group's weights (16 columns x k) stay in cache while every chunk of 4 rows reads them.
static void *run_part(void *arg) {
  const Part *part = arg;
  for (int g = part->g0; g < part->g1; g++)
    for (int r = 0; r < part->m; r += 4) part->fn(part->job, g, r, part->m - r < 4 ? part->m - r : 4);
  return NULL;
}

// Threads are made per call and joined, so nothing spins or waits between calls inside the server.
static void run_job(const void *job, int groups, int m, GroupFn fn, int threads) {
  if (threads > groups) threads = groups;
  if (threads < 1) threads = 1;
  if (threads > 64) threads = 64; // beyond that a weight stream this size gains nothing
  Part parts[64];
  pthread_t ids[64];
  int started[64] = {0};
  for (int i = 0; i < threads; i++) parts[i] = (Part){job, fn, m, (int)((int64_t)groups * i / threads), (int)((int64_t)groups * (i + 1) / threads)};
  for (int i = 1; i < threads; i++) started[i] = pthread_create(&ids[i], NULL, run_part, &parts[i]) == 0;
  run_part(&parts[0]);
  for (int i = 1; i < threads; i++) {
    if (started[i]) pthread_join(ids[i], NULL);
    else run_part(&parts[i]); // no thread to be had: the caller does that part itself
  }
}

static int use_vnni;

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

// The arguments every product takes: (w, x, m, y, threads, portable?).
typedef struct {
  void *x, *y;
  int64_t m, threads;
  bool portable;
} Args;

// The packed weights `w` (of `tag`) and the other arguments of product `name`, checked against w's k and n;
// NULL with a TypeError thrown when they do not fit. k and n are the first fields of both Packed types.
static void *product_args(napi_env env, napi_callback_info info, const napi_type_tag *tag, const char *name, const char *packer, Args *a) {
  char msg[160];
  size_t argc = 6;
  napi_value argv[6];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5) {
    snprintf(msg, sizeof msg, "%s(w, x, m, y, threads, portable?)", name);
    return throw_type(env, msg);
  }
  const int32_t *w = NULL;
  napi_valuetype vt;
  bool tagged = false;
  if (napi_typeof(env, argv[0], &vt) != napi_ok || vt != napi_external || napi_check_object_type_tag(env, argv[0], tag, &tagged) != napi_ok ||
      !tagged || napi_get_value_external(env, argv[0], (void **)&w) != napi_ok) {
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
  a->portable = false;
  if (argc >= 6) {
    napi_typeof(env, argv[5], &vt);
    snprintf(msg, sizeof msg, "%s: portable must be a boolean", name);
    if (vt != napi_undefined && napi_get_value_bool(env, argv[5], &a->portable) != napi_ok) return throw_type(env, msg);
  }
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
  w->packed = alloc64((size_t)w->np * nb * 16);
  w->sw = alloc64((size_t)w->np * nb * sizeof(float));
  if (!w->packed || !w->sw) {
    free(w->packed), free(w->sw), free(w);
    napi_throw_range_error(env, NULL, "packQ4: out of memory");
    return NULL;
  }
  w->bytes = (int64_t)w->np * nb * (16 + sizeof(float));
  pack(w, b, scales);
  return wrap_packed(env, w, w->bytes, finalize_packed, &PACKED_TAG);
}

static napi_value matmul_q4(napi_env env, napi_callback_info info) {
  Args a;
  Packed *w = product_args(env, info, &PACKED_TAG, "matmulQ4", "packQ4", &a);
  if (!w) return NULL;
  const int64_t m = a.m, threads = a.threads;
  void *x = a.x, *y = a.y;
  const bool portable = a.portable;

  const size_t nb = (size_t)w->nb;
  int8_t *q = malloc((size_t)m * w->k);
  float *sa = malloc((size_t)m * nb * sizeof(float)), *c = malloc((size_t)m * nb * sizeof(float));
  if (!q || !sa || !c) {
    free(q), free(sa), free(c);
    napi_throw_range_error(env, NULL, "matmulQ4: out of memory");
    return NULL;
  }
  for (int64_t r = 0; r < m; r++) quant_row((const float *)x + r * w->k, w->k, q + r * w->k, sa + r * nb, c + r * nb);
  const Job job = {w, (int32_t)m, q, sa, c, y};
  GroupFn fn = group_portable;
#if defined(__x86_64__)
  if (use_vnni && !portable) fn = group_vnni;
#endif
  run_job(&job, w->np / 16, job.m, fn, (int)threads);
  free(q), free(sa), free(c);
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

  uint8_t *q = malloc((size_t)m * w->kp);
  if (!q) {
    napi_throw_range_error(env, NULL, "matmulQ8: out of memory");
    return NULL;
  }
  Job8 job = {w, (int32_t)m, q, 0.f, 0, y};
  quant8(x, m, w->k, w->kp, q, &job.sa, &job.zp);
  GroupFn fn = group8_portable;
#if defined(__x86_64__)
  if (use_vnni && !portable) fn = group8_vnni;
#endif
  run_job(&job, w->np / 16, job.m, fn, (int)threads);
  free(q);
  return NULL;
}

static napi_value kernel_path(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value s;
  napi_create_string_utf8(env, use_vnni ? "avx512vnni" : "portable", NAPI_AUTO_LENGTH, &s);
  return s;
}

NAPI_MODULE_INIT() {
  use_vnni = cpu_has_vnni();
  const napi_property_descriptor props[] = {
    {"packQ4", NULL, pack_q4, NULL, NULL, NULL, napi_enumerable, NULL},
    {"matmulQ4", NULL, matmul_q4, NULL, NULL, NULL, napi_enumerable, NULL},
    {"packQ8", NULL, pack_q8, NULL, NULL, NULL, napi_enumerable, NULL},
    {"matmulQ8", NULL, matmul_q8, NULL, NULL, NULL, napi_enumerable, NULL},
    {"kernelPath", NULL, kernel_path, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, sizeof props / sizeof *props, props) != napi_ok) return NULL;
  return exports;
}

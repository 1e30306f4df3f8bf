// svc's kernels for WebAssembly (128-bit SIMD): what the Node-API addon (kernels.c) computes, for
// the WASM backend, where ONNX Runtime's int8 kernel widens and repacks every weight on every call and has no
// 4-bit kernel at all. The same operations and the same quantization of the activations (int8 per block of 32
// for 4 bits, as ONNX Runtime's level 4; DynamicQuantizeLinear over the whole tensor for 8 bits), with layouts
// of their own: WebAssembly has no dot product of bytes, so the weights meet the activations as 16-bit values
// (i32x4.dot_i16x8_s), and each group of 4 columns is stored as one stream (the engine prefetches nothing for
// us: 4 streams a k apart read an 8-bit weight at ~18 GB/s, one stream at ~29).
// Integer sums are exact; float steps follow kernels.c's order but without fused multiply-adds (plain SIMD
// has none), so 4-bit results agree with ONNX Runtime to float rounding and 8-bit products bit for bit.
// Built twice: with relaxed SIMD (where the engine has it), a 4-bit block's codes (0..15: its 7-bit operand)
// meet int8 activations in i32x4.relaxed_dot_i8x16_i7x16_add_s, 16 products an instruction, with no widening.
#include <wasm_simd128.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "logistic.h"
#include "wasm-pool.h"

#define EXPORT(name) __attribute__((export_name(name)))

static void *alloc16(size_t bytes) {
  return aligned_alloc(16, (bytes + 15) & ~(size_t)15);
}

EXPORT("svc_alloc") void *svc_alloc(size_t bytes) {
  return alloc16(bytes ? bytes : 1);
}

EXPORT("svc_free") void svc_free(void *p) {
  free(p);
}

// Lane j of the result: the sum of a_j's four lanes.
static inline v128_t sum4(v128_t a0, v128_t a1, v128_t a2, v128_t a3) {
  const v128_t t0 = wasm_i32x4_add(wasm_i32x4_shuffle(a0, a1, 0, 4, 1, 5), wasm_i32x4_shuffle(a0, a1, 2, 6, 3, 7));
  const v128_t t1 = wasm_i32x4_add(wasm_i32x4_shuffle(a2, a3, 0, 4, 1, 5), wasm_i32x4_shuffle(a2, a3, 2, 6, 3, 7));
  return wasm_i32x4_add(wasm_i32x4_shuffle(t0, t1, 0, 1, 4, 5), wasm_i32x4_shuffle(t0, t1, 2, 3, 6, 7));
}

// The first `cols` (1..4) lanes of v to y.
static inline void store_cols(float *y, v128_t v, int cols) {
  if (cols == 4) {
    wasm_v128_store(y, v);
    return;
  }
  float t[4];
  wasm_v128_store(t, v);
  memcpy(y, t, (size_t)cols * sizeof(float));
}

// --- 8-bit weights (MatMulInteger's int8 W [K][N], one scale a column) ---

// w - w_zp as [quad of 4 columns][k / 16][4 columns][16]; kp is k padded to 16, np n padded to 4 (zeros).
// wsum [np] = sum over k of (w - w_zp), for the activations' zero point.
typedef struct {
  int32_t k, n, kp, np;
  int8_t *w;
  int32_t *wsum;
  float *sw;
} Q8;

// A weight's packed form, empty: its sums and scales set, its rows given by svc_pack_q8_rows.
EXPORT("svc_new_q8") Q8 *new_q8(const float *scales, int k, int n) {
  Q8 *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->k = k, w->n = n, w->kp = (k + 15) & ~15, w->np = (n + 3) & ~3;
  w->w = alloc16((size_t)w->np * w->kp);
  w->wsum = calloc((size_t)w->np, sizeof(int32_t));
  w->sw = calloc((size_t)w->np, sizeof(float));
  if (!w->w || !w->wsum || !w->sw) {
    free(w->w), free(w->wsum), free(w->sw), free(w);
    return NULL;
  }
  memset(w->w, 0, (size_t)w->np * w->kp); // the padding
  for (int col = 0; col < n; col++) w->sw[col] = scales[col];
  return w;
}

// Rows 16c .. 16c + 15 of W (b: those rows, [rows][n], row-major; fewer at the end), minus the zero point, into
// their places. JavaScript hands a weight over 16 rows at a time, so that no whole copy of it (an LM head: 136 MB)
// stays in the module's memory, which never shrinks.
EXPORT("svc_pack_q8_rows") void pack_q8_rows(Q8 *w, const int8_t *b, int c, int zp) {
  const int chunks = w->kp / 16, rows = w->k - 16 * c < 16 ? w->k - 16 * c : 16;
  for (int col = 0; col < w->n; col++) {
    int8_t *out = w->w + ((size_t)(col / 4) * chunks + c) * 64 + (col % 4) * 16;
    for (int t = 0; t < rows; t++) {
      const int v = b[(size_t)t * w->n + col] - zp;
      out[t] = (int8_t)v;
      w->wsum[col] += v;
    }
  }
}

EXPORT("svc_free_q8") void free_q8(Q8 *w) {
  if (!w) return;
  free(w->w), free(w->wsum), free(w->sw), free(w);
}

// DynamicQuantizeLinear over all m rows of x, as kernels.c's quant8 (and ONNX Runtime): the bounds start at 0
// and skip NaN (pmin / pmax are its comparisons), scale = (hi - lo) / 255 or 1, zp = round(clamp(-lo / scale)),
// q = round(clamp(x / scale, -zp, 255 - zp)) + zp, half to even. q is written widened to int16, [m][kp].
static void quant8(const float *x, int m, int k, int kp, int16_t *q, float *scale, int32_t *zp) {
  v128_t lo = wasm_f32x4_splat(0.f), hi = lo;
  const size_t total = (size_t)m * k;
  size_t i = 0;
  for (; i + 4 <= total; i += 4) {
    const v128_t v = wasm_v128_load(x + i);
    lo = wasm_f32x4_pmin(lo, v);
    hi = wasm_f32x4_pmax(hi, v);
  }
  float l = 0.f, h = 0.f, t[4];
  for (; i < total; i++) {
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  wasm_v128_store(t, lo);
  for (int j = 0; j < 4; j++) l = t[j] < l ? t[j] : l;
  wasm_v128_store(t, hi);
  for (int j = 0; j < 4; j++) h = t[j] > h ? t[j] : h;
  const float s = h == l ? 1.f : (h - l) / 255.f;
  const int z = (int)nearbyintf(fmaxf(0.f, fminf(255.f, 0.f - l / s)));
  const v128_t sv = wasm_f32x4_splat(s), qlo = wasm_f32x4_splat((float)-z), qhi = wasm_f32x4_splat((float)(255 - z));
  const v128_t zv = wasm_i32x4_splat(z);
  for (int r = 0; r < m; r++) {
    const float *xr = x + (size_t)r * k;
    int16_t *qr = q + (size_t)r * kp;
    int j = 0;
    for (; j + 4 <= k; j += 4) {
      v128_t v = wasm_f32x4_div(wasm_v128_load(xr + j), sv);
      v = wasm_f32x4_pmin(qhi, wasm_f32x4_pmax(qlo, v));
      const v128_t c = wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_nearest(v)), zv);
      wasm_v128_store64_lane(qr + j, wasm_i16x8_narrow_i32x4(c, c), 0);
    }
    for (; j < k; j++) {
      float v = xr[j] / s;
      v = v > (float)-z ? v : (float)-z;
      v = v < (float)(255 - z) ? v : (float)(255 - z);
      qr[j] = (int16_t)(lrintf(v) + z);
    }
    for (; j < kp; j++) qr[j] = 0;
  }
  *scale = s;
  *zp = z;
}

// Rows r .. r + rows - 1 (rows 1 or 2, a constant where it is inlined) of one quad of columns: each column's
// widened weights serve every row (two rows of a prompt cost about 1.5 times one).
static inline __attribute__((always_inline)) void rows8(const Q8 *w, const int8_t *wq, const int16_t *q, int r, const int rows,
                                                        const v128_t *corr, const v128_t *mult, int n0, int cols, float *y) {
  const int chunks = w->kp / 16;
  v128_t acc[2][4];
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < 4; j++) acc[i][j] = wasm_i32x4_splat(0);
  for (int c = 0; c < chunks; c++) {
    v128_t a0[2], a1[2];
    for (int i = 0; i < rows; i++) {
      const int16_t *a = q + (size_t)(r + i) * w->kp + 16 * c;
      a0[i] = wasm_v128_load(a), a1[i] = wasm_v128_load(a + 8);
    }
    const int8_t *p = wq + (size_t)c * 64;
    for (int j = 0; j < 4; j++) {
      const v128_t v = wasm_v128_load(p + 16 * j), lo = wasm_i16x8_extend_low_i8x16(v), hi = wasm_i16x8_extend_high_i8x16(v);
      for (int i = 0; i < rows; i++)
        acc[i][j] = wasm_i32x4_add(acc[i][j], wasm_i32x4_add(wasm_i32x4_dot_i16x8(lo, a0[i]), wasm_i32x4_dot_i16x8(hi, a1[i])));
    }
  }
  for (int i = 0; i < rows; i++) {
    const v128_t t = wasm_i32x4_sub(sum4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]), corr[i]);
    store_cols(y + (size_t)(r + i) * w->n + n0, wasm_f32x4_mul(wasm_f32x4_convert_i32x4(t), mult[i]), cols);
  }
}

// Below this many multiply-adds a call runs on one thread: handing a part to a worker costs more than it saves.
enum { PARALLEL_MACS = 1 << 18 };

// The parts a product of `quads` quads of columns and `macs` multiply-adds is split into: a few a thread, so a
// worker that wakes late leaves the caller less to wait for.
static int parts_of(int quads, int64_t macs, int threads) {
  if (threads < 2 || macs < PARALLEL_MACS) return 1;
  return quads < 4 * threads ? quads : 4 * threads;
}

// An 8-bit product's activations: q [m][kp], and each row's scale sa[r] and zero point zp[r] (those of its set).
typedef struct {
  int16_t *q;
  float *sa;
  int32_t *zp;
} Quant8;

// x's m rows quantized in `sets` equal sets, each by itself (quant8), as kernels.c's quant8_sets: one set is
// DynamicQuantizeLinear over the whole tensor; one per batch row gives each row the values it gets alone.
static int quant8_sets(const float *x, int m, int k, int kp, int sets, Quant8 *a) {
  a->q = alloc16((size_t)m * kp * sizeof(int16_t));
  a->sa = alloc16((size_t)m * sizeof(float));
  a->zp = alloc16((size_t)m * sizeof(int32_t));
  if (!a->q || !a->sa || !a->zp) return free(a->q), free(a->sa), free(a->zp), -1;
  const int per = m / sets;
  for (int s = 0; s < sets; s++) {
    float scale;
    int32_t z;
    quant8(x + (size_t)s * per * k, per, k, kp, a->q + (size_t)s * per * kp, &scale, &z);
    for (int r = s * per; r < (s + 1) * per; r++) a->sa[r] = scale, a->zp[r] = z;
  }
  return 0;
}

static void free_quant8(Quant8 *a) {
  free(a->q), free(a->sa), free(a->zp);
}

typedef struct {
  const Q8 *w;
  const Quant8 *a;
  int m;
  float *y;
} Job8;

// Part of y [m][n] from q [m][kp], its share of the quads: float(sum (q - zp)(w - w_zp)) * (sa * sw), as ONNX
// Runtime's product and its scales, with each row's sa and zp.
static void quads8(const void *job, int part, int parts) {
  const Job8 *j = job;
  const Q8 *w = j->w;
  const Quant8 *a = j->a;
  const int chunks = w->kp / 16;
  int from, to;
  part_range(w->np / 4, part, parts, &from, &to);
  for (int quad = from; quad < to; quad++) {
    const int8_t *wq = w->w + (size_t)quad * chunks * 64;
    const int n0 = quad * 4, cols = w->n - n0 < 4 ? w->n - n0 : 4;
    const v128_t wsum = wasm_v128_load(w->wsum + n0), sw = wasm_v128_load(w->sw + n0);
    v128_t corr[2], mult[2];
    int r = 0;
    for (; r < j->m; r += 2) {
      const int rows = j->m - r < 2 ? 1 : 2;
      for (int i = 0; i < rows; i++) {
        corr[i] = wasm_i32x4_mul(wsum, wasm_i32x4_splat(a->zp[r + i]));
        mult[i] = wasm_f32x4_mul(wasm_f32x4_splat(a->sa[r + i]), sw);
      }
      if (rows == 2) rows8(w, wq, a->q, r, 2, corr, mult, n0, cols, j->y);
      else rows8(w, wq, a->q, r, 1, corr, mult, n0, cols, j->y);
    }
  }
}

static void product8(const Q8 *w, const Quant8 *a, int m, float *y, int threads) {
  const Job8 job = {w, a, m, y};
  svc_run_parts(&job, quads8, parts_of(w->np / 4, (int64_t)m * w->kp * w->np, threads), threads);
}

// sets: the equal sets of x's m rows quantized each by itself (1: all together, as ONNX Runtime).
EXPORT("svc_matmul_q8") int matmul_q8(const Q8 *w, const float *x, int m, float *y, int threads, int sets) {
  Quant8 a;
  if (quant8_sets(x, m, w->k, w->kp, sets, &a)) return -1;
  product8(w, &a, m, y, threads);
  free_quant8(&a);
  return 0;
}

// --- 4-bit weights (MatMulNBits: blocks of 32, 16 bytes each, code 2i in byte i's low nibble, 2i + 1 in its high) ---

// The blocks as [quad of 4 columns][block][64 bytes]; scales as [quad][block][4]. np is n padded to 4 (zero codes,
// zero scales). The 128-bit build keeps each column's block as 16 bytes, one after the other, each as eight 16-bit
// lanes, lane j holding codes j, j + 8, j + 16 and j + 24 in its four nibbles from the lowest: a mask and three
// shifts of 16-bit lanes then give the codes of 8 consecutive values each, ready for i32x4.dot_i16x8_s (where
// bytes would need widening first). The relaxed build interleaves the quad's columns: its 16 bytes t hold, in
// bytes 4l .. 4l + 3, column l's codes 8t .. 8t + 3 in their low nibbles and 8t + 4 .. 8t + 7 in their high ones.
// A relaxed dot product then sums each column in its own lane, against 4 activations repeated in every lane:
// no sums across lanes per block.
typedef struct {
  int32_t k, n, nb, np;
  uint8_t *w;
  float *s;
} Q4;

// Column l of a quad: one block of the file (code 2i in byte i's low nibble, 2i + 1 in its high) into the quad's
// 64 bytes of that block, as the build keeps it.
static void block4(const uint8_t *in, uint8_t *quad, int l) {
  uint8_t c[32];
  for (int i = 0; i < 16; i++) c[2 * i] = in[i] & 15, c[2 * i + 1] = in[i] >> 4;
#ifdef __wasm_relaxed_simd__
  for (int t = 0; t < 4; t++)
    for (int i = 0; i < 4; i++) quad[16 * t + 4 * l + i] = (uint8_t)(c[8 * t + i] | c[8 * t + 4 + i] << 4);
#else
  uint8_t *out = quad + 16 * l;
  for (int j = 0; j < 8; j++) out[2 * j] = (uint8_t)(c[j] | c[j + 8] << 4), out[2 * j + 1] = (uint8_t)(c[j + 16] | c[j + 24] << 4);
#endif
}

EXPORT("svc_pack_q4") Q4 *pack_q4(const uint8_t *b, const float *scales, int k, int n) {
  Q4 *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->k = k, w->n = n, w->nb = k / 32, w->np = (n + 3) & ~3;
  w->w = alloc16((size_t)w->np * w->nb * 16);
  w->s = alloc16((size_t)w->np * w->nb * sizeof(float));
  if (!w->w || !w->s) {
    free(w->w), free(w->s), free(w);
    return NULL;
  }
  memset(w->w, 0, (size_t)w->np * w->nb * 16); // the padding columns' codes
  for (int col = 0; col < w->np; col++)
    for (int bl = 0; bl < w->nb; bl++) {
      const size_t quad = (size_t)(col / 4) * w->nb + bl;
      if (col < n) block4(b + ((size_t)col * w->nb + bl) * 16, w->w + quad * 64, col % 4);
      w->s[quad * 4 + col % 4] = col < n ? scales[(size_t)col * w->nb + bl] : 0.f;
    }
  return w;
}

EXPORT("svc_free_q4") void free_q4(Q4 *w) {
  if (!w) return;
  free(w->w), free(w->s), free(w);
}

// A 4-bit product's activations: int8 for the relaxed dot product, int16 for i32x4.dot_i16x8_s.
#ifdef __wasm_relaxed_simd__
typedef int8_t act4_t;
#else
typedef int16_t act4_t;
#endif

// One row quantized per block of 32 as ONNX Runtime's level 4 (and kernels.c's quant_row): s = amax / 127,
// q = round(x * (127 / amax)), half to even; c = 8 * s * sum(q) takes the codes' zero point 8 back out.
static void quant_row(const float *x, int k, act4_t *q, float *sa, float *c) {
  for (int b = 0; b < k / 32; b++) {
    const float *xb = x + (size_t)b * 32;
    v128_t m = wasm_f32x4_splat(0.f);
    for (int i = 0; i < 32; i += 4) m = wasm_f32x4_max(m, wasm_f32x4_abs(wasm_v128_load(xb + i)));
    float t[4], amax;
    wasm_v128_store(t, m);
    amax = fmaxf(fmaxf(t[0], t[1]), fmaxf(t[2], t[3]));
    const float s = amax / 127.f, inv = amax != 0.f ? 127.f / amax : 0.f;
    const v128_t iv = wasm_f32x4_splat(inv);
    int32_t v[32];
    for (int i = 0; i < 32; i += 4) {
      wasm_v128_store(v + i, wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_nearest(wasm_f32x4_mul(wasm_v128_load(xb + i), iv))));
    }
    int sum = 0;
    act4_t *qb = q + (size_t)b * 32;
    for (int i = 0; i < 32; i++) {
      qb[i] = (act4_t)v[i];
      sum += v[i];
    }
    sa[b] = s;
    c[b] = 8.f * s * (float)sum;
  }
}

// How the relaxed build takes a 4-bit block's dot products (one flag in the shared memory, for every thread).
// Accumulating: two i32x4.relaxed_dot_i8x16_i7x16_add_s, one instruction each where the engine lowers them to a
// VNNI one (V8 on x86 with AVX-VNNI). Pairs: i16x8.relaxed_dot_i8x16_i7x16_s twice (pmaddubsw), their sum, and one
// i32x4.dot_i16x8_s: fewer instructions where the accumulating form is lowered as those steps (JavaScriptCore), and
// right on Node 20's V8, whose accumulating form gives wrong sums until a function is optimized. Both give the same
// integers.
static int dot_pairs;

EXPORT("svc_q4_dot_pairs") int q4_dot_pairs(int on) {
#ifdef __wasm_relaxed_simd__
  dot_pairs = on != 0;
  return 1;
#else
  (void)on;
  return 0;
#endif
}

// acc + scale * (sa * sums - c): a block's part of a row's 4 outputs, kernels.c's steps unfused (so that both
// builds give the same bits: relaxed SIMD's multiply-add is fused on some engines and not on others).
static inline __attribute__((always_inline)) v128_t add_block4(v128_t acc, v128_t scale, v128_t sums, float sa, float c) {
  const v128_t t = wasm_f32x4_sub(wasm_f32x4_mul(wasm_f32x4_splat(sa), wasm_f32x4_convert_i32x4(sums)), wasm_f32x4_splat(c));
  return wasm_f32x4_add(acc, wasm_f32x4_mul(scale, t));
}

#ifdef __wasm_relaxed_simd__
// Each lane one column's sum: 4 activations (one int32) repeated in every lane against its 4 codes. Pairs sum in
// 16 bits (|q| <= 127 and codes <= 15: a pair's sum is at most 3,810, a block's 8 at most 30,480); the
// accumulating form in four chains (low and high nibbles of even and odd t), short enough to overlap.

// A block's step t of a quad: its 16 bytes' low (lo) and high (hi) nibbles. The high ones by a 16-bit shift and
// the mask: u8x16.shr costs engines a mask of its own.
static inline __attribute__((always_inline)) void codes4(const uint8_t *p, v128_t *lo, v128_t *hi) {
  const v128_t low = wasm_i8x16_splat(15), v = wasm_v128_load(p);
  *lo = wasm_v128_and(v, low), *hi = wasm_v128_and(wasm_u16x8_shr(v, 4), low);
}

// part (a block's sums so far, one row) + step t's dot products: codes lo against activations al, hi against ah.
static inline __attribute__((always_inline)) void step4(v128_t *part, v128_t lo, v128_t hi, v128_t al, v128_t ah, int t, const int pairs) {
  if (pairs) {
    part[0] = wasm_i16x8_add(part[0], wasm_i16x8_add(wasm_i16x8_relaxed_dot_i8x16_i7x16(al, lo), wasm_i16x8_relaxed_dot_i8x16_i7x16(ah, hi)));
  } else {
    v128_t *p = part + 2 * (t & 1);
    p[0] = wasm_i32x4_relaxed_dot_i8x16_i7x16_add(al, lo, p[0]);
    p[1] = wasm_i32x4_relaxed_dot_i8x16_i7x16_add(ah, hi, p[1]);
  }
}

// A block's sums of its 4 columns, in 32 bits, from its parts.
static inline __attribute__((always_inline)) v128_t sums_of(const v128_t *part, const int pairs) {
  return pairs ? wasm_i32x4_dot_i16x8(part[0], wasm_i16x8_splat(1))
               : wasm_i32x4_add(wasm_i32x4_add(part[0], part[1]), wasm_i32x4_add(part[2], part[3]));
}
#endif

// Rows r .. r + rows - 1 (1, 2, or 4 with pairs) of one quad of columns, per block scale * (sa * sum(code * q) - c),
// summed: each column's unpacked codes serve every row.
// `pairs` (the relaxed build): the dot products as pairs (above), else as accumulating ones.
static inline __attribute__((always_inline)) void rows4(const Q4 *w, const uint8_t *wq, const float *sq, const act4_t *q, const float *sa,
                                                        const float *c, int r, const int rows, int n0, int cols, float *y, const int pairs) {
  const int nb = w->nb;
#ifndef __wasm_relaxed_simd__
  (void)pairs;
  const v128_t low16 = wasm_i16x8_splat(15);
#endif
  v128_t acc[4];
  for (int i = 0; i < rows; i++) acc[i] = wasm_f32x4_splat(0.f);
  for (int b = 0; b < nb; b++) {
#ifdef __wasm_relaxed_simd__
    v128_t part[4][4], sum[4];
    for (int i = 0; i < rows; i++)
      for (int p = 0; p < 4; p++) part[i][p] = wasm_i32x4_splat(0);
    for (int t = 0; t < 4; t++) {
      v128_t lo, hi;
      codes4(wq + ((size_t)b * 4 + t) * 16, &lo, &hi);
      for (int i = 0; i < rows; i++) {
        const act4_t *ab = q + (size_t)(r + i) * w->k + (size_t)b * 32 + 8 * t;
        step4(part[i], lo, hi, wasm_v128_load32_splat(ab), wasm_v128_load32_splat(ab + 4), t, pairs);
      }
    }
    for (int i = 0; i < rows; i++) sum[i] = sums_of(part[i], pairs);
#else
    v128_t a[2][4], s[2][4], sum[2];
    for (int i = 0; i < rows; i++) {
      const act4_t *ab = q + (size_t)(r + i) * w->k + (size_t)b * 32;
      for (int t = 0; t < 4; t++) a[i][t] = wasm_v128_load(ab + 8 * t);
    }
    for (int j = 0; j < 4; j++) {
      const v128_t v = wasm_v128_load(wq + ((size_t)b * 4 + j) * 16);
      const v128_t c0 = wasm_v128_and(v, low16), c1 = wasm_v128_and(wasm_u16x8_shr(v, 4), low16);
      const v128_t c2 = wasm_v128_and(wasm_u16x8_shr(v, 8), low16), c3 = wasm_u16x8_shr(v, 12);
      for (int i = 0; i < rows; i++)
        s[i][j] = wasm_i32x4_add(wasm_i32x4_add(wasm_i32x4_dot_i16x8(c0, a[i][0]), wasm_i32x4_dot_i16x8(c1, a[i][1])),
                                 wasm_i32x4_add(wasm_i32x4_dot_i16x8(c2, a[i][2]), wasm_i32x4_dot_i16x8(c3, a[i][3])));
    }
    for (int i = 0; i < rows; i++) sum[i] = sum4(s[i][0], s[i][1], s[i][2], s[i][3]);
#endif
    const v128_t scale = wasm_v128_load(sq + (size_t)b * 4);
    for (int i = 0; i < rows; i++) {
      const size_t at = (size_t)(r + i) * nb + b;
      acc[i] = add_block4(acc[i], scale, sum[i], sa[at], c[at]);
    }
  }
  for (int i = 0; i < rows; i++) store_cols(y + (size_t)(r + i) * w->n + n0, acc[i], cols);
}

#ifdef __wasm_relaxed_simd__
// One row (a decode step's) of two quads, qa and qb, block by block: their weights come in as two streams, and each
// step's activations serve both. Each quad's sums are rows4's, in the same order. 24 MLPs of 4 bits, one row, one
// thread, against one quad at a time (alternating in one process, an AMD EPYC with AVX2): 0.78-0.84x the time on
// Deno, 0.87-0.90x on Bun, 0.87-0.97x on Node 20.
static inline __attribute__((always_inline)) void pair4(const Q4 *w, int qa, int qb, const act4_t *q, const float *sa, const float *c,
                                                        float *y, const int pairs) {
  const int nb = w->nb;
  const uint8_t *wa = w->w + (size_t)qa * nb * 64, *wb = w->w + (size_t)qb * nb * 64;
  const float *sqa = w->s + (size_t)qa * nb * 4, *sqb = w->s + (size_t)qb * nb * 4;
  v128_t acc_a = wasm_f32x4_splat(0.f), acc_b = acc_a;
  for (int b = 0; b < nb; b++) {
    v128_t pa[4], pb[4];
    for (int p = 0; p < 4; p++) pa[p] = pb[p] = wasm_i32x4_splat(0);
    for (int t = 0; t < 4; t++) {
      const act4_t *ab = q + (size_t)b * 32 + 8 * t;
      const v128_t al = wasm_v128_load32_splat(ab), ah = wasm_v128_load32_splat(ab + 4);
      v128_t lo, hi;
      codes4(wa + ((size_t)b * 4 + t) * 16, &lo, &hi);
      step4(pa, lo, hi, al, ah, t, pairs);
      codes4(wb + ((size_t)b * 4 + t) * 16, &lo, &hi);
      step4(pb, lo, hi, al, ah, t, pairs);
    }
    acc_a = add_block4(acc_a, wasm_v128_load(sqa + (size_t)b * 4), sums_of(pa, pairs), sa[b], c[b]);
    acc_b = add_block4(acc_b, wasm_v128_load(sqb + (size_t)b * 4), sums_of(pb, pairs), sa[b], c[b]);
  }
  store_cols(y + qa * 4, acc_a, w->n - qa * 4 < 4 ? w->n - qa * 4 : 4);
  store_cols(y + qb * 4, acc_b, w->n - qb * 4 < 4 ? w->n - qb * 4 : 4);
}
#endif

typedef struct {
  const Q4 *w;
  const act4_t *q;
  const float *sa, *c;
  int m;
  float *y;
} Job4;

// Part of y [m][n] from the rows' codes, scales and corrections, its share of the quads.
static void quads4(const void *job, int part, int parts) {
  const Job4 *j = job;
  const Q4 *w = j->w;
  int from, to;
  part_range(w->np / 4, part, parts, &from, &to);
#ifdef __wasm_relaxed_simd__
  if (j->m == 1) {
    // a decode step's row: the part's quads two at a time, one from each half (two weight streams)
    const int half = (to - from) / 2;
    for (int i = 0; i < half; i++) {
      if (dot_pairs) pair4(w, from + i, from + half + i, j->q, j->sa, j->c, j->y, 1);
      else pair4(w, from + i, from + half + i, j->q, j->sa, j->c, j->y, 0);
    }
    from += 2 * half; // an odd one left: below
  }
#endif
  for (int quad = from; quad < to; quad++) {
    const uint8_t *wq = w->w + (size_t)quad * w->nb * 64;
    const float *sq = w->s + (size_t)quad * w->nb * 4;
    const int n0 = quad * 4, cols = w->n - n0 < 4 ? w->n - n0 : 4;
    int r = 0;
    if (dot_pairs) {
#ifdef __wasm_relaxed_simd__
      // pairs keep one sum a row: four rows at once take 0.87-0.95x the time of twice two (4 and 16 rows of 4-bit
      // MLPs, an AMD EPYC with AVX2, on Node 20, Bun and Deno); not the accumulating form, whose four sums a row
      // do not fit the registers (1.5x on Deno), nor the 128-bit build (1.2x on Bun)
      for (; r + 4 <= j->m; r += 4) rows4(w, wq, sq, j->q, j->sa, j->c, r, 4, n0, cols, j->y, 1);
#endif
      for (; r + 2 <= j->m; r += 2) rows4(w, wq, sq, j->q, j->sa, j->c, r, 2, n0, cols, j->y, 1);
      if (r < j->m) rows4(w, wq, sq, j->q, j->sa, j->c, r, 1, n0, cols, j->y, 1);
    } else {
      for (; r + 2 <= j->m; r += 2) rows4(w, wq, sq, j->q, j->sa, j->c, r, 2, n0, cols, j->y, 0);
      if (r < j->m) rows4(w, wq, sq, j->q, j->sa, j->c, r, 1, n0, cols, j->y, 0);
    }
  }
}

// Scratch for a 4-bit product's activations: codes, scales, corrections.
typedef struct {
  act4_t *q;
  float *sa, *c;
} Quant4;

static int quant4(const float *x, int m, int k, Quant4 *out) {
  const size_t nb = (size_t)k / 32;
  out->q = alloc16((size_t)m * k * sizeof(act4_t));
  out->sa = malloc((size_t)m * nb * sizeof(float));
  out->c = malloc((size_t)m * nb * sizeof(float));
  if (!out->q || !out->sa || !out->c) return free(out->q), free(out->sa), free(out->c), -1;
  for (int r = 0; r < m; r++) quant_row(x + (size_t)r * k, k, out->q + (size_t)r * k, out->sa + r * nb, out->c + r * nb);
  return 0;
}

static void free_quant4(Quant4 *a) {
  free(a->q), free(a->sa), free(a->c);
}

static void product4(const Q4 *w, const Quant4 *a, int m, float *y, int threads) {
  const Job4 job = {w, a->q, a->sa, a->c, m, y};
  svc_run_parts(&job, quads4, parts_of(w->np / 4, (int64_t)m * w->k * w->np, threads), threads);
}

EXPORT("svc_matmul_q4") int matmul_q4(const Q4 *w, const float *x, int m, float *y, int threads) {
  Quant4 a;
  if (quant4(x, m, w->k, &a)) return -1;
  product4(w, &a, m, y, threads);
  free_quant4(&a);
  return 0;
}

// --- MLPs: y = down(silu(gate(x)) * up(x)) ---

// MLAS's logistic function (kernels.c), its steps without fusing the multiply-adds.
static const float ALPHA[5] = {ALPHA_9, ALPHA_7, ALPHA_5, ALPHA_3, ALPHA_1};
static const float BETA[6] = {BETA_10, BETA_8, BETA_6, BETA_4, BETA_2, BETA_0};

// g <- (g * sigmoid(g)) * u, n values.
static void silu_mul(float *g, const float *u, size_t n) {
  const v128_t lo = wasm_f32x4_splat(LOGISTIC_LO), hi = wasm_f32x4_splat(LOGISTIC_HI), half = wasm_f32x4_splat(0.5f), zero = wasm_f32x4_splat(0.f);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const v128_t g0 = wasm_v128_load(g + i);
    const v128_t x = wasm_f32x4_pmin(hi, wasm_f32x4_pmax(lo, g0)), x2 = wasm_f32x4_mul(x, x);
    v128_t p = wasm_f32x4_splat(ALPHA[0]), q = wasm_f32x4_splat(BETA[0]);
    for (int j = 1; j < 5; j++) p = wasm_f32x4_add(wasm_f32x4_mul(x2, p), wasm_f32x4_splat(ALPHA[j]));
    for (int j = 1; j < 6; j++) q = wasm_f32x4_add(wasm_f32x4_mul(x2, q), wasm_f32x4_splat(BETA[j]));
    const v128_t s = wasm_f32x4_pmax(zero, wasm_f32x4_add(wasm_f32x4_div(wasm_f32x4_mul(x, p), q), half));
    wasm_v128_store(g + i, wasm_f32x4_mul(wasm_f32x4_mul(g0, s), wasm_v128_load(u + i)));
  }
  for (; i < n; i++) {
    float x = g[i] < LOGISTIC_LO ? LOGISTIC_LO : g[i];
    x = x > LOGISTIC_HI ? LOGISTIC_HI : x;
    const float x2 = x * x;
    float p = ALPHA[0], q = BETA[0];
    for (int j = 1; j < 5; j++) p = x2 * p + ALPHA[j];
    for (int j = 1; j < 6; j++) q = x2 * q + BETA[j];
    float s = x * p / q + 0.5f;
    s = s < 0.f ? 0.f : s;
    g[i] = (g[i] * s) * u[i];
  }
}

EXPORT("svc_mlp_q8") int mlp_q8(const Q8 *gate, const Q8 *up, const Q8 *down, const float *x, int m, float *y, int threads, int sets) {
  const size_t inter = (size_t)gate->n;
  float *g = alloc16(2 * (size_t)m * inter * sizeof(float));
  Quant8 ax, ah;
  if (!g || quant8_sets(x, m, gate->k, gate->kp, sets, &ax)) return free(g), -1;
  float *u = g + (size_t)m * inter;
  product8(gate, &ax, m, g, threads);
  product8(up, &ax, m, u, threads);
  free_quant8(&ax);
  silu_mul(g, u, (size_t)m * inter);
  if (quant8_sets(g, m, down->k, down->kp, sets, &ah)) return free(g), -1;
  product8(down, &ah, m, y, threads);
  free_quant8(&ah);
  free(g);
  return 0;
}

EXPORT("svc_mlp_q4") int mlp_q4(const Q4 *gate, const Q4 *up, const Q4 *down, const float *x, int m, float *y, int threads) {
  const size_t inter = (size_t)gate->n;
  float *g = alloc16(2 * (size_t)m * inter * sizeof(float));
  Quant4 ax, ah;
  if (!g || quant4(x, m, gate->k, &ax)) return free(g), -1;
  float *u = g + (size_t)m * inter;
  product4(gate, &ax, m, g, threads);
  product4(up, &ax, m, u, threads);
  free_quant4(&ax);
  silu_mul(g, u, (size_t)m * inter);
  if (quant4(g, m, down->k, &ah)) return free(g), -1;
  product4(down, &ah, m, y, threads);
  free_quant4(&ah);
  free(g);
  return 0;
}

// --- The steps between products ---

// RMSNorm of each row (n values, a multiple of 8): the squares summed in 8 lanes, the lanes added in halves,
// (x * (1 / sqrt(sum / n + eps))) * w, as kernels.c (without its fused multiply-adds).
EXPORT("svc_rms_norm") void rms_norm(const float *x, const float *w, int n, int rows, float eps, float *y) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * n;
    float *yr = y + (size_t)r * n;
    v128_t s0 = wasm_f32x4_splat(0.f), s1 = s0;
    for (int j = 0; j < n; j += 8) {
      const v128_t a = wasm_v128_load(xr + j), b = wasm_v128_load(xr + j + 4);
      s0 = wasm_f32x4_add(s0, wasm_f32x4_mul(a, a));
      s1 = wasm_f32x4_add(s1, wasm_f32x4_mul(b, b));
    }
    float l[8];
    wasm_v128_store(l, s0);
    wasm_v128_store(l + 4, s1);
    for (int half = 4; half >= 1; half /= 2)
      for (int i = 0; i < half; i++) l[i] += l[i + half];
    const v128_t inv = wasm_f32x4_splat(1.f / sqrtf(l[0] / (float)n + eps));
    for (int j = 0; j < n; j += 4) wasm_v128_store(yr + j, wasm_f32x4_mul(wasm_f32x4_mul(wasm_v128_load(xr + j), inv), wasm_v128_load(w + j)));
  }
}

// y = a + b, b as long as a or one row of it repeated.
EXPORT("svc_add_into") void add_into(const float *a, const float *b, size_t alen, size_t blen, float *y) {
  for (size_t r = 0; r < alen; r += blen)
    for (size_t j = 0; j < blen; j++) y[r + j] = a[r + j] + b[j];
}

typedef struct {
  const Attention *a;
  int failed;
} JobA;

// Part of the attention's units.
static void units(const void *job, int part, int parts) {
  JobA *j = (JobA *)job;
  int from, to;
  part_range(j->a->b * j->a->s * j->a->kv_heads, part, parts, &from, &to);
  // one scratch for the part's units: the heap's lock is taken once a part, not once a unit
  float *scratch = malloc(sizeof(float) * svc_attention_scratch(j->a));
  for (int u = from; u < to; u++)
    if (svc_attention_unit(j->a, ATTENTION_PLAIN, u, scratch)) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
  free(scratch);
}

// A layer's attention (attention.c's plain path): 0, -1 (a position outside the rotary caches), -2 (memory).
EXPORT("svc_attention") int attention(const Attention *a, int threads) {
  if (svc_attention_prepare(a)) return -1;
  const int n = a->b * a->s * a->kv_heads;
  JobA job = {a, 0};
  svc_run_parts(&job, units, threads < n ? threads : n, threads);
  return job.failed ? -2 : 0;
}

// The layout JavaScript fills for svc_attention.
EXPORT("svc_attention_size") int attention_size(void) {
  return (int)sizeof(Attention);
}

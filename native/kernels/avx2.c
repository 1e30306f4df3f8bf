// The products' AVX2 path, for x64 without AVX-512 VNNI (AMD Zen 2 and 3, Intel before Ice Lake): the plain-C
// kernels' integer sums and float steps (kernels.c), in the same order, with 256-bit vectors, so that its outputs
// are theirs. AVX2's byte product (vpmaddubsw: unsigned by signed bytes, pairs added into 16 bits with
// saturation) is exact only while a pair's sum fits in 16 bits. 4-bit codes (0..15) times activations in
// [-127, 127] fit, and so do eight such pairs added (30,480 at most). 8-bit activations (0..255) times weights
// (-128..127) do not (65,280: where ONNX Runtime's own AVX2 kernel saturates), so both are widened to 16 bits
// and multiplied with vpmaddwd, which adds its pairs into 32 bits.
#if defined(__x86_64__)

#include "avx2.h"
#include "logistic.h"
#include "products.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

// GCC assigns the 16 vector registers before it schedules: scheduling first, with an eye on register pressure,
// leaves fewer sums in memory (5-10 % faster products here, measured alternating with the file without it)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("schedule-insns", "sched-pressure")
#endif

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

// The columns of group g (16, fewer in the last group) of a product with n columns.
static inline int group_cols(int n, int g) {
  return n - g * 16 < 16 ? n - g * 16 : 16;
}

// A lane mask for the first n (0..8) of 8 floats.
AVX2_TARGET static inline __m256i first_lanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// --- 4 bits (kernels.c, group_portable): sa * sum(code * q) - c per block, times the block's scale, added up ---

// A block's codes for 8 columns (bytes 32h..32h+31 of each of its four 64-byte steps, at p): the low nibbles
// (codes 4s..4s+3 of lane j's column) and the high ones (codes 16+4s..16+4s+3).
typedef struct {
  __m256i l0, l1, l2, l3, h0, h1, h2, h3;
} Codes;

AVX2_TARGET static inline __attribute__((always_inline)) Codes codes_of(const uint8_t *p) {
  const __m256i mask = _mm256_set1_epi8(15);
  const __m256i v0 = _mm256_load_si256((const __m256i *)p), v1 = _mm256_load_si256((const __m256i *)(p + 64));
  const __m256i v2 = _mm256_load_si256((const __m256i *)(p + 128)), v3 = _mm256_load_si256((const __m256i *)(p + 192));
  return (Codes){
    _mm256_and_si256(v0, mask), _mm256_and_si256(v1, mask), _mm256_and_si256(v2, mask), _mm256_and_si256(v3, mask),
    _mm256_and_si256(_mm256_srli_epi16(v0, 4), mask), _mm256_and_si256(_mm256_srli_epi16(v1, 4), mask),
    _mm256_and_si256(_mm256_srli_epi16(v2, 4), mask), _mm256_and_si256(_mm256_srli_epi16(v3, 4), mask),
  };
}

// sum(code * q) of each of the 8 columns over the block's 32 activations a, in 32-bit lanes.
AVX2_TARGET static inline __attribute__((always_inline)) __m256i code_sums(const Codes *c, const int8_t *a) {
  __m256i s = _mm256_maddubs_epi16(c->l0, broadcast4(a));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(c->l1, broadcast4(a + 4)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(c->l2, broadcast4(a + 8)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(c->l3, broadcast4(a + 12)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(c->h0, broadcast4(a + 16)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(c->h1, broadcast4(a + 20)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(c->h2, broadcast4(a + 24)));
  s = _mm256_add_epi16(s, _mm256_maddubs_epi16(c->h3, broadcast4(a + 28)));
  return _mm256_madd_epi16(s, _mm256_set1_epi16(1)); // lane j's two 16-bit sums, into 32 bits
}

// acc + scale * (sa * sums - c): a block's part of its row's 8 outputs (group_portable's fused steps); sa and c
// given, or row i's of the job.
AVX2_TARGET static inline __attribute__((always_inline)) __m256 add_scaled(float sa, float c, __m256 scale, __m256i sums, __m256 acc) {
  const __m256 t = _mm256_fmsub_ps(_mm256_set1_ps(sa), _mm256_cvtepi32_ps(sums), _mm256_set1_ps(c));
  return _mm256_fmadd_ps(scale, t, acc);
}

AVX2_TARGET static inline __attribute__((always_inline)) __m256 add_block(const Job *job, size_t i, __m256 scale, __m256i sums, __m256 acc) {
  return add_scaled(job->sa[i], job->c[i], scale, sums, acc);
}

// The scales of a block's 8 columns of half h.
AVX2_TARGET static inline __attribute__((always_inline)) __m256 scales_of(const Packed *w, size_t at, const int half) {
  return half ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w->sh + at))) : _mm256_loadu_ps(w->sw + at);
}

// 24 blocks (6 KB) ahead, as the AVX-512 kernel: the weights stream from memory once.
AVX2_TARGET static inline __attribute__((always_inline)) void fetch_ahead(const Packed *w, const uint8_t *p, size_t at, const int half) {
  _mm_prefetch((const char *)(p + 6144), _MM_HINT_T0);
  _mm_prefetch((const char *)(p + 6208), _MM_HINT_T0);
  _mm_prefetch((const char *)(p + 6272), _MM_HINT_T0);
  _mm_prefetch((const char *)(p + 6336), _MM_HINT_T0);
  _mm_prefetch(half ? (const char *)(w->sh + at + 24 * 16) : (const char *)(w->sw + at + 24 * 16), _MM_HINT_T0);
}

// One row (a decode step's): the group's 16 columns in one pass, as its weights stream in. half: the scales are
// halves (a constant in each caller). Accumulators are named, not an array, so that they stay in registers.
AVX2_TARGET static inline __attribute__((always_inline)) void group_row(const Job *job, int g, int r, int b0, int b1, const int half) {
  const Packed *w = job->w;
  const int nb = w->nb, n0 = g * 16, cols = group_cols(w->n, g);
  const uint8_t *p = w->packed + ((size_t)g * nb + b0) * 256;
  float *y = job->y + (size_t)r * w->n + n0;
  __m256 acc0 = b0 > 0 ? load_first(y, cols) : _mm256_setzero_ps(), acc1 = b0 > 0 ? load_first(y + 8, cols - 8) : _mm256_setzero_ps();
  for (int b = b0; b < b1; b++, p += 256) {
    const size_t at = ((size_t)g * nb + b) * 16, i = (size_t)r * nb + b;
    fetch_ahead(w, p, at, half);
    const int8_t *a = job->q + (size_t)r * w->k + (size_t)b * 32;
    const Codes c0 = codes_of(p);
    acc0 = add_block(job, i, scales_of(w, at, half), code_sums(&c0, a), acc0);
    const Codes c1 = codes_of(p + 32);
    acc1 = add_block(job, i, scales_of(w, at + 8, half), code_sums(&c1, a), acc1);
  }
  store_first(y, acc0, cols);
  store_first(y + 8, acc1, cols - 8);
}

// s + a row's code sums of a block's step of 8 columns: the low codes (lo) times its activations a[0..3], the
// high ones times a[16..19].
AVX2_TARGET static inline __attribute__((always_inline)) __m256i step_sums(__m256i s, __m256i lo, __m256i hi, const int8_t *a) {
  return _mm256_add_epi16(s, _mm256_add_epi16(_mm256_maddubs_epi16(lo, broadcast4(a)), _mm256_maddubs_epi16(hi, broadcast4(a + 16))));
}

// The rows of a product of 3 or more, in chunks of 4 (Job's rows4; chunk j: rows 4j to 4j + 3, svc_rows4_bytes
// each), block by block: the block's 8 quads of 4 activations, each quad of the chunk's rows together (quad j of
// row r at 16j + 4r), then the rows' 4 scales and 4 corrections (zeros for rows past m), so that the kernel
// reaches every row's values from one pointer.
enum { ROWS4_BLOCK = 160 };

size_t svc_rows4_bytes(int k) {
  return (size_t)(k / 32) * ROWS4_BLOCK;
}

void svc_rows4_avx2(const int8_t *q, const float *sa, const float *c, int m, int k, void *out) {
  const int nb = k / 32;
  memset(out, 0, svc_rows4_bytes(k) * (size_t)((m + 3) / 4));
  for (int r = 0; r < m; r++) {
    uint8_t *chunk = (uint8_t *)out + svc_rows4_bytes(k) * (size_t)(r / 4);
    for (int b = 0; b < nb; b++) {
      uint8_t *o = chunk + (size_t)b * ROWS4_BLOCK;
      float *s = (float *)(o + 128);
      for (int j = 0; j < 8; j++) memcpy(o + 16 * j + 4 * (r & 3), q + (size_t)r * k + (size_t)b * 32 + 4 * j, 4);
      s[r & 3] = sa[(size_t)r * nb + b], s[4 + (r & 3)] = c[(size_t)r * nb + b];
    }
  }
}

// Two rows (a prompt's last chunk of 2; a product of 3 or more rows takes group_rows4, two decode rows the pair
// kernel): 8 of the group's columns (h) over blocks [b0, b1), each step's codes unpacked once for both rows, each
// row's code sums kept in 16 bits until the block ends. The rows' sums so far are read from y where b0 > 0 (a
// segment of k after the first) and written back.
AVX2_TARGET static inline __attribute__((always_inline)) void group_two(const Job *job, int g, int r0, int b0, int b1, const int half, int h) {
  const Packed *w = job->w;
  const int nb = w->nb, n0 = g * 16 + 8 * h, cols = w->n - n0 < 8 ? w->n - n0 : 8;
  const uint8_t *p = w->packed + ((size_t)g * nb + b0) * 256 + 32 * h;
  float *y = job->y + (size_t)r0 * w->n + n0;
  const size_t n = (size_t)w->n, k = (size_t)w->k;
  const __m256i mask = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
  __m256 acc0 = b0 > 0 ? load_first(y, cols) : _mm256_setzero_ps(), acc1 = b0 > 0 ? load_first(y + n, cols) : _mm256_setzero_ps();
  for (int b = b0; b < b1; b++, p += 256) {
    const size_t at = ((size_t)g * nb + b) * 16 + 8 * h, i = (size_t)r0 * nb + b;
    if (h == 0) fetch_ahead(w, p, at, half);
    const int8_t *a = job->q + (size_t)r0 * k + (size_t)b * 32;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0;
    for (int t = 0; t < 4; t++) {
      const __m256i v = _mm256_load_si256((const __m256i *)(p + 64 * t));
      const __m256i lo = _mm256_and_si256(v, mask), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
      s0 = step_sums(s0, lo, hi, a + 4 * t), s1 = step_sums(s1, lo, hi, a + k + 4 * t);
    }
    const __m256 scale = scales_of(w, at, half);
    acc0 = add_block(job, i, scale, _mm256_madd_epi16(s0, ones), acc0);
    acc1 = add_block(job, i + nb, scale, _mm256_madd_epi16(s1, ones), acc1);
  }
  store_first(y, acc0, cols);
  store_first(y + n, acc1, cols);
}

// One row's products of a step (ymm8: the group's columns 0-7, ymm9: 8-15, as codes) with its 4 activations at
// X(%[x]), added to its sums S0 and S1: one broadcast for both halves (vbroadcastss: the float broadcast, one
// operation fewer than vpbroadcastd's on Zen 3).
#define ROW4_STEP(X, S0, S1)                                                                                          \
  "vbroadcastss " #X "(%[x]), %%ymm10\n\t"                                                                            \
  "vpmaddubsw %%ymm10, %%ymm8, %%ymm11\n\t"                                                                           \
  "vpaddw %%ymm11, %[" #S0 "], %[" #S0 "]\n\t"                                                                        \
  "vpmaddubsw %%ymm10, %%ymm9, %%ymm11\n\t"                                                                           \
  "vpaddw %%ymm11, %[" #S1 "], %[" #S1 "]\n\t"

// Step t of a block (its 64 bytes at P(%[p]), read once into ymm12 and ymm13): the low codes times each row's
// quad t (at 16t), the high codes times its quad 4 + t (at 64 + 16t).
#define ROWS4_STEP(P0, P1, X0, X1, X2, X3, Z0, Z1, Z2, Z3)                                                             \
  "vmovdqa " #P0 "(%[p]), %%ymm12\n\t"                                                                                \
  "vmovdqa " #P1 "(%[p]), %%ymm13\n\t"                                                                                \
  "vpand %%ymm12, %[mask], %%ymm8\n\t"                                                                                \
  "vpand %%ymm13, %[mask], %%ymm9\n\t"                                                                                \
  ROW4_STEP(X0, a0, a1) ROW4_STEP(X1, b0, b1) ROW4_STEP(X2, c0, c1) ROW4_STEP(X3, d0, d1)                          \
  "vpsrlw $4, %%ymm12, %%ymm8\n\t"                                                                                    \
  "vpsrlw $4, %%ymm13, %%ymm9\n\t"                                                                                    \
  "vpand %%ymm8, %[mask], %%ymm8\n\t"                                                                                 \
  "vpand %%ymm9, %[mask], %%ymm9\n\t"                                                                                 \
  ROW4_STEP(Z0, a0, a1) ROW4_STEP(Z1, b0, b1) ROW4_STEP(Z2, c0, c1) ROW4_STEP(Z3, d0, d1)

// Row r's block added to its float sums (add_scaled's steps, in its order): its code sums S0 and S1 (columns 0-7
// and 8-15) into 32 bits and to floats, sa * sums - c with its scale and correction (at 128 + 4r and 144 + 4r of
// %[x]), times the columns' scales (ymm12, ymm13) plus its sums so far (at A0 and A0 + 32 of %[acc]).
#define ROW4_ADD(S0, S1, R, A0, A1)                                                                                   \
  "vpmaddwd %[ones], %[" #S0 "], %[" #S0 "]\n\t"                                                                      \
  "vpmaddwd %[ones], %[" #S1 "], %[" #S1 "]\n\t"                                                                      \
  "vcvtdq2ps %[" #S0 "], %[" #S0 "]\n\t"                                                                              \
  "vcvtdq2ps %[" #S1 "], %[" #S1 "]\n\t"                                                                              \
  "vbroadcastss 128+4*" #R "(%[x]), %%ymm10\n\t"                                                                      \
  "vbroadcastss 144+4*" #R "(%[x]), %%ymm11\n\t"                                                                      \
  "vfmsub213ps %%ymm11, %%ymm10, %[" #S0 "]\n\t"                                                                      \
  "vfmsub213ps %%ymm11, %%ymm10, %[" #S1 "]\n\t"                                                                      \
  "vfmadd213ps " #A0 "(%[acc]), %%ymm12, %[" #S0 "]\n\t"                                                              \
  "vfmadd213ps " #A1 "(%[acc]), %%ymm13, %[" #S1 "]\n\t"                                                              \
  "vmovaps %[" #S0 "], " #A0 "(%[acc])\n\t"                                                                           \
  "vmovaps %[" #S1 "], " #A1 "(%[acc])\n\t"

// A block of 4 rows (rows4's, at x) over the group's 16 columns (its 256 bytes at p, their scales at scale),
// added to the rows' float sums acc (acc[2r]: columns 0-7 of row r, acc[2r + 1]: 8-15). In assembly: GCC, given
// these steps in intrinsics, kept the 8 code sums in memory (a hundred spills a block) and the float sums twice;
// here the code sums stay in 8 registers beside the codes (2, and their bytes as read: 2), a broadcast, a product
// and the mask, and each float sum is read and written once. A fourth row past m has zero activations, scale and
// correction: its sums stay zero, and nothing reads them. Against the float steps in intrinsics (and each weight
// read twice), alternating in one process, the same bits: 4 rows of 48 products 896 x 4,864 and 24 of 4,864 x 896
// 0.87-0.94x the time from memory and in cache, 24 q4 MLPs of 4 rows 0.93x at one thread and 0.90x at two, a
// prompt's 82 rows 0.91-0.97x.
static const __m256i ONES16 = {0x0001000100010001LL, 0x0001000100010001LL, 0x0001000100010001LL, 0x0001000100010001LL};

AVX2_TARGET static inline __attribute__((always_inline)) void block4(const uint8_t *p, const uint8_t *x, const __m256 *scale, __m256i mask,
                                                                     __m256 *acc) {
  __m256i a0, a1, b0, b1, c0, c1, d0, d1;
  __asm__("vpxor %[a0], %[a0], %[a0]\n\t"
          "vpxor %[a1], %[a1], %[a1]\n\t"
          "vpxor %[b0], %[b0], %[b0]\n\t"
          "vpxor %[b1], %[b1], %[b1]\n\t"
          "vpxor %[c0], %[c0], %[c0]\n\t"
          "vpxor %[c1], %[c1], %[c1]\n\t"
          "vpxor %[d0], %[d0], %[d0]\n\t"
          "vpxor %[d1], %[d1], %[d1]\n\t"
          ROWS4_STEP(0, 32, 0, 4, 8, 12, 64, 68, 72, 76)
          ROWS4_STEP(64, 96, 16, 20, 24, 28, 80, 84, 88, 92)
          ROWS4_STEP(128, 160, 32, 36, 40, 44, 96, 100, 104, 108)
          ROWS4_STEP(192, 224, 48, 52, 56, 60, 112, 116, 120, 124)
          "vmovaps (%[scale]), %%ymm12\n\t"
          "vmovaps 32(%[scale]), %%ymm13\n\t"
          ROW4_ADD(a0, a1, 0, 0, 32) ROW4_ADD(b0, b1, 1, 64, 96) ROW4_ADD(c0, c1, 2, 128, 160) ROW4_ADD(d0, d1, 3, 192, 224)
          : [a0] "=&x"(a0), [a1] "=&x"(a1), [b0] "=&x"(b0), [b1] "=&x"(b1), [c0] "=&x"(c0), [c1] "=&x"(c1), [d0] "=&x"(d0), [d1] "=&x"(d1),
            "+m"(*(__m256(*)[8])acc)
          : [p] "r"(p), [x] "r"(x), [scale] "r"(scale), [acc] "r"(acc), [mask] "x"(mask), [ones] "m"(ONES16),
            "m"(*(const uint8_t(*)[256])p), "m"(*(const uint8_t(*)[160])x), "m"(*(const __m256(*)[2])scale)
          : "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13");
}

// A chunk of 3 or 4 rows (Job's rows4; rows a constant in each caller, the assembly's fourth row zeros where there
// are 3): the group's 16 columns in one pass, each broadcast of a row's activations feeding both halves' products.
// With 4 rows the AVX2 kernel is bound by its vector operations, not by memory: every vpmaddubsw needs its row's 4 activations broadcast (on Zen 3 as costly as the product; a
// timing-only build without them ran in half the time) and a 16-bit add, where VNNI's one vpdpbusd does all
// three. Against the kernel before it (8 of the group's columns at a time for up to 4 rows, the two halves taking
// turns every 8 blocks, the rows' values from rows4), 4 rows of 48 products 896 x 4,864 took 0.84x the time from memory and
// 0.78-0.85x in cache (a local harness), 24 q4 MLPs of 4 rows 0.76-0.91x at one thread and 0.84-0.87x at two (the
// addon before and after); a prompt's rows, cache-resident, 82 rows 0.87-0.94x, 33 rows 0.93-0.97x; all
// alternating in one process, the same bits.
AVX2_TARGET static inline __attribute__((always_inline)) void group_rows4(const Job *job, int g, int r0, const int rows, int b0, int b1,
                                                                          const int half) {
  const Packed *w = job->w;
  const int nb = w->nb, cols = group_cols(w->n, g);
  const size_t n = (size_t)w->n;
  const uint8_t *p = w->packed + ((size_t)g * nb + b0) * 256;
  const uint8_t *x = (const uint8_t *)job->rows4 + svc_rows4_bytes(w->k) * (size_t)(r0 / 4) + (size_t)b0 * ROWS4_BLOCK;
  float *y = job->y + (size_t)r0 * n + g * 16;
  __m256 acc[8], scale[2];
  for (int r = 0; r < 4; r++) {
    acc[2 * r] = b0 > 0 && r < rows ? load_first(y + r * n, cols) : _mm256_setzero_ps();
    acc[2 * r + 1] = b0 > 0 && r < rows ? load_first(y + r * n + 8, cols - 8) : _mm256_setzero_ps();
  }
  const __m256i mask = _mm256_set1_epi8(15);
  for (int b = b0; b < b1; b++, p += 256, x += ROWS4_BLOCK) {
    const size_t at = ((size_t)g * nb + b) * 16;
    fetch_ahead(w, p, at, half);
    scale[0] = scales_of(w, at, half), scale[1] = scales_of(w, at + 8, half);
    block4(p, x, scale, mask, acc);
  }
  for (int r = 0; r < rows; r++) {
    store_first(y + r * n, acc[2 * r], cols);
    store_first(y + r * n + 8, acc[2 * r + 1], cols - 8);
  }
}

AVX2_TARGET static inline __attribute__((always_inline)) void group_rows(const Job *job, int g, int r0, const int rows, int b0, int b1,
                                                                         const int half) {
  if (rows == 1) return group_row(job, g, r0, b0, b1, half);
  if (rows > 2) return group_rows4(job, g, r0, rows, b0, b1, half);
  group_two(job, g, r0, b0, b1, half, 0);
  if (job->w->n - g * 16 > 8) group_two(job, g, r0, b0, b1, half, 1);
}

// One row of two groups (PairFn), block by block: two weight streams at once. A thread reading its weights as
// one stream gets less from memory than one reading two (on this 2-core AMD EPYC, a plain read loop: ~9-10 GB/s
// against ~11-13 at one thread, ~15 against ~19-20 at two). A decode step's products, one row, with gate and up
// read together and two halves of every other product: 24 layers of q4 MLPs took 0.79x the time at one thread
// and 0.91x at two, of q8 MLPs 0.84x and 0.94x, the q8 LM head 0.87x and 0.88x (the addon before and after,
// alternating in one process; the outputs the same bits).
AVX2_TARGET static inline __attribute__((always_inline)) void pair_row(const Job *ja, int ga, const Job *jb, int gb, int r, const int half) {
  const Packed *wa = ja->w, *wb = jb->w;
  const int nb = wa->nb, cols_a = group_cols(wa->n, ga), cols_b = group_cols(wb->n, gb);
  const uint8_t *pa = wa->packed + (size_t)ga * nb * 256, *pb = wb->packed + (size_t)gb * nb * 256;
  const int8_t *qa = ja->q + (size_t)r * wa->k, *qb = jb->q + (size_t)r * wb->k;
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
  for (int b = 0; b < nb; b++, pa += 256, pb += 256) {
    const size_t ata = ((size_t)ga * nb + b) * 16, atb = ((size_t)gb * nb + b) * 16, i = (size_t)r * nb + b;
    fetch_ahead(wa, pa, ata, half);
    fetch_ahead(wb, pb, atb, half);
    const Codes ca0 = codes_of(pa);
    a0 = add_block(ja, i, scales_of(wa, ata, half), code_sums(&ca0, qa + (size_t)b * 32), a0);
    const Codes ca1 = codes_of(pa + 32);
    a1 = add_block(ja, i, scales_of(wa, ata + 8, half), code_sums(&ca1, qa + (size_t)b * 32), a1);
    const Codes cb0 = codes_of(pb);
    b0 = add_block(jb, i, scales_of(wb, atb, half), code_sums(&cb0, qb + (size_t)b * 32), b0);
    const Codes cb1 = codes_of(pb + 32);
    b1 = add_block(jb, i, scales_of(wb, atb + 8, half), code_sums(&cb1, qb + (size_t)b * 32), b1);
  }
  float *ya = ja->y + (size_t)r * wa->n + ga * 16, *yb = jb->y + (size_t)r * wb->n + gb * 16;
  store_first(ya, a0, cols_a), store_first(ya + 8, a1, cols_a - 8);
  store_first(yb, b0, cols_b), store_first(yb + 8, b1, cols_b - 8);
}

AVX2_TARGET void svc_pair_avx2(const void *a, int ga, const void *b, int gb, int r) {
  const Job *ja = a, *jb = b;
  if (ja->w->sh) pair_row(ja, ga, jb, gb, r, 1);
  else pair_row(ja, ga, jb, gb, r, 0);
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

// The end of row r's sums for 8 columns (a vector of 32-bit sums, in order): sum - zp * wsum, times sa * sw.
AVX2_TARGET static inline void store8(const Job8 *job, int r, int n0, int cols, __m256i sums) {
  const Packed8 *w = job->w;
  const __m256i corr = _mm256_mullo_epi32(_mm256_loadu_si256((const __m256i *)(w->wsum + n0)), _mm256_set1_epi32(job->zp[r]));
  const __m256 mult = _mm256_mul_ps(_mm256_set1_ps(job->sa[r]), _mm256_loadu_ps(w->sw + n0));
  store_first(job->y + (size_t)r * w->n + n0, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sums, corr)), mult), cols);
}

// vpmaddwd on a step's 16 weights of 4 columns (widened to 16 bits) and the step's 4 activations repeated gives
// each column's sum in two 32-bit lanes (2j and 2j + 1); vphaddd adds them, giving columns 0 1 4 5 | 2 3 6 7 of
// its two vectors, and the 64-bit pieces reordered 0 2 1 3 put them in order.
AVX2_TARGET static inline __m256i columns8(__m256i a, __m256i b) {
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(a, b), _MM_SHUFFLE(3, 1, 2, 0));
}

// Row r's sums for group g's 16 columns (columns8 of s0, s1 and of s2, s3), stored as store8 does.
AVX2_TARGET static inline void store8_group(const Job8 *job, int r, int g, __m256i s0, __m256i s1, __m256i s2, __m256i s3) {
  const int cols = group_cols(job->w->n, g);
  store8(job, r, g * 16, cols, columns8(s0, s1));
  if (cols > 8) store8(job, r, g * 16 + 8, cols - 8, columns8(s2, s3));
}

// The step's 4 activations of a row (16 bits each, as svc_quant8_avx2 writes them), four times over: one load.
AVX2_TARGET static inline __attribute__((always_inline)) __m256i activations4(const int16_t *a) {
  int64_t four;
  memcpy(&four, a, sizeof four);
  return _mm256_set1_epi64x(four);
}

// The step's weights of 4 columns (16 bytes at p), widened to 16 bits.
AVX2_TARGET static inline __attribute__((always_inline)) __m256i weights4(const int8_t *p) {
  return _mm256_cvtepi8_epi16(_mm_load_si128((const __m128i *)p));
}

// acc + the 4 columns' pair sums of w times v.
AVX2_TARGET static inline __attribute__((always_inline)) __m256i madd(__m256i acc, __m256i w, __m256i v) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(w, v));
}

// One or two rows (a constant in each caller) over steps [s0, s1) of k (4 each), the group's 16 columns at once,
// adding to acc (each row's four vectors of sums): each step's weights widened once for both rows, eight sums in
// registers (four rows, or 8 columns at a time, ran 1.33x slower here). Each row's activations come widened (a
// step's four: one broadcast load); widened here at each use, with a broadcast and a shuffle, two rows took 1.2x
// the time (a local harness, the two alternating, this AMD EPYC: 19-21 -> 23-25 MAC a cycle, near the 24 that
// this loop's 22 vector operations for 128 MACs on four pipes allow).
AVX2_TARGET static inline __attribute__((always_inline)) void group8_steps(const Job8 *job, int g, int r0, const int rows, int s0, int s1,
                                                                           __m256i *acc) {
  const Packed8 *w = job->w;
  const size_t kp = (size_t)w->kp;
  const int8_t *p = w->packed + ((size_t)g * (kp / 4) + s0) * 64;
  const int16_t *a = (const int16_t *)job->q + (size_t)r0 * kp + (size_t)s0 * 4;
  __m256i a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], b0 = acc[4], b1 = acc[5], b2 = acc[6], b3 = acc[7];
  for (int s = s0; s < s1; s++, p += 64, a += 4) {
    _mm_prefetch((const char *)(p + 6144), _MM_HINT_T0); // 6 KB ahead, as the AVX-512 kernel
    const __m256i w0 = weights4(p), w1 = weights4(p + 16), w2 = weights4(p + 32), w3 = weights4(p + 48);
    __m256i v = activations4(a);
    a0 = madd(a0, w0, v), a1 = madd(a1, w1, v), a2 = madd(a2, w2, v), a3 = madd(a3, w3, v);
    if (rows > 1) {
      v = activations4(a + kp);
      b0 = madd(b0, w0, v), b1 = madd(b1, w1, v), b2 = madd(b2, w2, v), b3 = madd(b3, w3, v);
    }
  }
  acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3, acc[4] = b0, acc[5] = b1, acc[6] = b2, acc[7] = b3;
}

// Rows r0 .. r0 + rows - 1 (rows <= 4) of group g: two at a time (with four, the sums do not fit in the 16
// registers). A batch's decode step (m <= 4) reads the weights from memory as it goes: with more than two rows,
// the two pairs take turns every DECODE_TURN8 steps, so that the reads keep coming while the second pair's sums are
// made (the second pair after the first added its time from the core's caches to the memory time: 24 q8 MLPs of
// 4 rows took 0.86x the time with the turns at one thread, 0.89x at two; the addon before and after, alternating).
enum { DECODE_TURN8 = 32 };

AVX2_TARGET static void group8_rows(const Job8 *job, int g, int r0, int rows) {
  const int steps = job->w->kp / 4, turn = rows > 2 && job->m <= 4 ? DECODE_TURN8 : steps;
  __m256i acc[2][8];
  for (int i = 0; i < 8; i++) acc[0][i] = acc[1][i] = _mm256_setzero_si256();
  for (int s0 = 0; s0 < steps; s0 += turn) {
    const int s1 = steps - s0 < turn ? steps : s0 + turn;
    if (rows == 1) group8_steps(job, g, r0, 1, s0, s1, acc[0]);
    else group8_steps(job, g, r0, 2, s0, s1, acc[0]);
    if (rows == 3) group8_steps(job, g, r0 + 2, 1, s0, s1, acc[1]);
    else if (rows == 4) group8_steps(job, g, r0 + 2, 2, s0, s1, acc[1]);
  }
  for (int r = 0; r < rows; r++) store8_group(job, r0 + r, g, acc[r / 2][4 * (r & 1)], acc[r / 2][4 * (r & 1) + 1], acc[r / 2][4 * (r & 1) + 2], acc[r / 2][4 * (r & 1) + 3]);
}

// One row of two groups (PairFn), step by step: two weight streams at once (see pair_row).
AVX2_TARGET void svc_pair8_avx2(const void *a, int ga, const void *b, int gb, int r) {
  const Job8 *ja = a, *jb = b;
  const Packed8 *wa = ja->w, *wb = jb->w;
  const int steps = wa->kp / 4;
  const int8_t *pa = wa->packed + (size_t)ga * steps * 64, *pb = wb->packed + (size_t)gb * steps * 64;
  const int16_t *qa = (const int16_t *)ja->q + (size_t)r * wa->kp, *qb = (const int16_t *)jb->q + (size_t)r * wb->kp;
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  for (int s = 0; s < steps; s++, pa += 64, pb += 64, qa += 4, qb += 4) {
    _mm_prefetch((const char *)(pa + 6144), _MM_HINT_T0);
    _mm_prefetch((const char *)(pb + 6144), _MM_HINT_T0);
    const __m256i va = activations4(qa), vb = activations4(qb);
    a0 = madd(a0, weights4(pa), va), a1 = madd(a1, weights4(pa + 16), va);
    a2 = madd(a2, weights4(pa + 32), va), a3 = madd(a3, weights4(pa + 48), va);
    b0 = madd(b0, weights4(pb), vb), b1 = madd(b1, weights4(pb + 16), vb);
    b2 = madd(b2, weights4(pb + 32), vb), b3 = madd(b3, weights4(pb + 48), vb);
  }
  store8_group(ja, r, ga, a0, a1, a2, a3);
  store8_group(jb, r, gb, b0, b1, b2, b3);
}

AVX2_TARGET void svc_group8_avx2(const void *arg, int g, int r0, int rows, int b0, int b1) {
  (void)b0, (void)b1; // always the whole of k (run_job's seg 0)
  group8_rows(arg, g, r0, rows);
}

// kernels.c's quant8 with AVX2, the same values, written in 16 bits (Job8): MINPS/MAXPS keep their second operand
// (the running value) where x is NaN, as quant8's comparisons do; the same division, clamps and rounding.
AVX2_TARGET void svc_quant8_avx2(const float *x, int64_t m, int k, int kp, void *out, float *scale, int32_t *zp) {
  int16_t *q = out;
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
    int16_t *qr = q + r * kp;
    int j = 0;
    for (; j + 8 <= k; j += 8) {
      __m256 v = _mm256_div_ps(_mm256_loadu_ps(xr + j), s);
      v = _mm256_min_ps(_mm256_max_ps(v, qlo), qhi);
      const __m256i n = _mm256_add_epi32(_mm256_cvtps_epi32(v), zv); // 0..255
      _mm_storeu_si128((__m128i *)(qr + j), _mm_packus_epi32(_mm256_castsi256_si128(n), _mm256_extracti128_si256(n, 1)));
    }
    for (; j < k; j++) {
      float v = xr[j] / sf;
      v = v > (float)-z ? v : (float)-z;
      v = v < (float)(255 - z) ? v : (float)(255 - z);
      qr[j] = (int16_t)(lrintf(v) + z);
    }
    for (; j < kp; j++) qr[j] = 0;
  }
}

// kernels.c's argmax_plain with AVX2, the same answer: the largest value by MAXPS, which keeps its second operand
// (the running maxima) where x is NaN, then the first index holding it. -1 where nothing is above -infinity.
AVX2_TARGET int64_t svc_argmax_avx2(const float *x, int64_t n) {
  __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0), m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
    m2 = _mm256_max_ps(_mm256_loadu_ps(x + i + 16), m2), m3 = _mm256_max_ps(_mm256_loadu_ps(x + i + 24), m3);
  }
  float max = max8(_mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
  for (; i < n; i++) max = x[i] > max ? x[i] : max;
  if (max == -INFINITY) return -1;
  const __m256 v = _mm256_set1_ps(max);
  for (i = 0; i + 8 <= n; i += 8) {
    const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), v, _CMP_EQ_OQ));
    if (hit) return i + __builtin_ctz((unsigned)hit);
  }
  for (; i < n; i++) if (x[i] == max) return i;
  return -1;
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

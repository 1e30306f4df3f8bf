// The weights, activations and jobs of the 4- and 8-bit products (kernels.c), shared with their AVX2 path (avx2.c).
#ifndef SVC_PRODUCTS_H
#define SVC_PRODUCTS_H

#include <stddef.h>
#include <stdint.h>

// Weights repacked per group of 16 columns, per block b, 4 steps of 64 bytes: lane j (column j) holds codes
// 4s..4s+3 of its block in the low nibbles and codes 16+4s..16+4s+3 in the high ones. Scales as
// [group][block][16]: in half precision (sh) when every scale is exactly a half, as llama.cpp's Q4_0 stores
// them and svc's quantizer makes them (a decode step reads its weights from memory once, and a block's scale
// in fp32 is a fifth of its bytes); else in fp32 (sw). np is n padded to 16 (zero codes, zero scales).
typedef struct {
  int32_t k, n, np, nb;
  uint8_t *packed;
  float *sw;
  uint16_t *sh;
  int64_t bytes;
} Packed;

// One product's activations, quantized: q [m][k] int8, sa [m][nb] scales, c [m][nb] = 8 * scale * sum(q).
// rows4: NULL, or (3 or more rows on the AVX2 path, where its kernel needs it) the same values in chunks of 4
// rows, block by block, every row's in one place (svc_rows4_avx2), so that the kernel reaches a chunk's from one
// pointer.
typedef struct {
  const Packed *w;
  int32_t m;
  const int8_t *q;
  const float *sa, *c;
  float *y;
  const void *rows4;
} Job;

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

// One product's activations, quantized as DynamicQuantizeLinear does: q [m][kp] (zeros past k), and each row's
// scale sa[r] and zero point zp[r]. The rows are quantized in sets (kernels.c, quant8_sets): all m together as
// ONNX Runtime does, or each batch row's positions by themselves, and a set's rows share its scale and zero
// point. The values are 0..255, one byte each (uint8), or two on the AVX2 path (int16), whose kernels multiply in
// 16 bits: widened once by the quantizer, not at each of their uses (a column group's, per row).
typedef struct {
  const Packed8 *w;
  int32_t m;
  const void *q;
  const float *sa;
  const int32_t *zp;
  float *y;
} Job8;

// One group of 16 columns of a product (a Job or a Job8), rows [r0, r0 + rows), rows <= 4, blocks [b0, b1) of k.
typedef void (*GroupFn)(const void *job, int g, int r0, int rows, int b0, int b1);
// One row r (a decode step's) of two column groups: group ga of job a and group gb of job b, two products of the
// same k (gate and up), or two groups of one. Each group's outputs are those its GroupFn gives; its weights come
// in as a second stream beside the first.
typedef void (*PairFn)(const void *a, int ga, const void *b, int gb, int r);
// One row's activations quantized per block of 32: q, its scales sa and corrections c (see Job).
typedef void (*QuantFn)(const float *x, int k, int8_t *q, float *sa, float *c);
// All m rows quantized together as ONNX Runtime's DynamicQuantizeLinear does (kernels.c, quant8), into q as its
// path's kernels read them (Job8).
typedef void (*Quant8Fn)(const float *x, int64_t m, int k, int kp, void *q, float *scale, int32_t *zp);
// g[j] <- (g[j] * sigmoid(g[j])) * u[j] for cols (<= 16) columns (kernels.c, silu_mul_portable).
typedef void (*SiluMulFn)(float *g, const float *u, int cols);

// The scale and zero point of the range [lo, hi] (lo <= 0 <= hi), as DynamicQuantizeLinear takes them.
void svc_quant8_params(float lo, float hi, float *scale, int32_t *zp);

#if defined(__x86_64__)
// The AVX2 path (avx2.c): the plain-C kernels' results with 256-bit vectors, for x64 without AVX-512 VNNI.
int svc_has_avx2(void);
void svc_group_avx2(const void *job, int g, int r0, int rows, int b0, int b1);
void svc_quant_row_avx2(const float *x, int k, int8_t *q, float *sa, float *c);
// The bytes of a chunk of 4 rows in svc_rows4_avx2's layout for k, and that layout of m rows' q, sa and c
// ((m + 3) / 4 chunks; see Job).
size_t svc_rows4_bytes(int k);
void svc_rows4_avx2(const int8_t *q, const float *sa, const float *c, int m, int k, void *out);
void svc_group8_avx2(const void *job, int g, int r0, int rows, int b0, int b1);
void svc_pair_avx2(const void *a, int ga, const void *b, int gb, int r);
void svc_pair8_avx2(const void *a, int ga, const void *b, int gb, int r);
void svc_quant8_avx2(const float *x, int64_t m, int k, int kp, void *q, float *scale, int32_t *zp);
void svc_silu_mul_avx2(float *g, const float *u, int cols);
int64_t svc_argmax_avx2(const float *x, int64_t n);
#endif

#endif

// A decoder layer's attention for a few new positions, as the graphs svc cuts compute it (see attention.c).
#ifndef SVC_ATTENTION_H
#define SVC_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  // b rows of s new positions each, after p cached ones; heads query heads of head_size values over kv_heads
  // key/value heads (heads a multiple of kv_heads); rope_rows rows in the rotary caches.
  int32_t b, s, p, heads, kv_heads, head_size, rope_rows;
  const float *q;          // [b][s][heads * head_size]
  const float *k, *v;      // [b][s][kv_heads * head_size]
  const int64_t *pos;      // [b][s]: each position's row in cos and sin
  const float *cos, *sin;  // [rope_rows][head_size / 2]
  const float *past_k, *past_v;  // [b][kv_heads][p][head_size]
  const float *mask;       // [b][s][p + s], added to the scores
  float divisor;           // the scores are divided by it
  float *out;              // [b][s][heads * head_size]
  float *new_k, *new_v;    // [b][kv_heads][s][head_size]: k rotated, v
} Attention;

// The new keys (rotated) and values written out: 0, or -1 where a position's row is outside the rotary caches
// (nothing is written then). Called first.
int svc_attention_prepare(const Attention *a);

// The vector instructions a unit may use (on x64; the WebAssembly build has its own).
enum { ATTENTION_PLAIN = 0, ATTENTION_AVX2 = 1, ATTENTION_AVX512 = 2 };

// One unit of the attention, the query heads of one key/value head at one position of one row: unit =
// (row * s + position) * kv_heads + kv head, b * s * kv_heads of them, independent of each other (run on any
// threads), with the instructions simd allows (ATTENTION_*). 0, or -2 when out of memory.
int svc_attention_unit(const Attention *a, int simd, int unit, float *scratch);

// The floats of scratch a unit needs: `scratch` (for one unit at a time) or NULL (it allocates its own).
size_t svc_attention_scratch(const Attention *a);

#endif

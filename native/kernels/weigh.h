// A sampler's weights (weigh.c), bound by kernels.c.
#ifndef SVC_WEIGH_H
#define SVC_WEIGH_H
#include <stdint.h>

// Each of data's n logits' weight e^((v - max) · inv) into w (0 below floor_), and their sum; with at and mass
// (else NULL), each candidate's bucket of `buckets` over max .. floor_ (buckets for the others) and each
// bucket's weight. frac: 2^(j/256) for j = 0 ... 255. avx2: the weights 4 at a time (x64 with AVX2 only).
double svc_weigh(const float *data, int64_t n, double max, double floor_, double inv, const double *frac, double *w, uint16_t *at,
                 double *mass, int buckets, int avx2);

// The indices i of at[0 .. n) equal to b, in order, into members; returns how many.
int64_t svc_bucket_members(const uint16_t *at, int64_t n, int b, int32_t *members);

// sampling.ts's draw over the kept tokens: from r, less each kept token's weight w[i] in index order (kept: w[i] not 0
// and data[i] sorting at or before (end_val, end_idx), value desc, index asc), the token where it reaches 0 or
// below; else the last kept one; -1 where none is.
int64_t svc_draw_kept(const float *data, const double *w, int64_t n, double end_val, double end_idx, double r);

#endif

// A sampler's weights (weigh.c), bound by kernels.c.
#ifndef SVC_WEIGH_H
#define SVC_WEIGH_H
#include <stdint.h>

// Each of data's n logits' weight e^((v - max) · inv) into w (0 below floor_), and their sum; with at and mass
// (else NULL), each candidate's bucket of `buckets` over max .. floor_ (buckets for the others) and each
// bucket's weight. frac: 2^(j/256) for j = 0 ... 255. avx2: the weights 4 at a time (x64 with AVX2 only).
double svc_weigh(const float *data, int64_t n, double max, double floor_, double inv, const double *frac, double *w, uint16_t *at,
                 double *mass, int buckets, int avx2);

#endif

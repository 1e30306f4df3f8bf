/**
 * The small steps of a decoder layer between its weight products, for the kernel calls of a graph cut around
 * them (./weight-split.ts): residual sums, a product's bias, RMSNorm. Each is computed in single precision
 * in the order ONNX Runtime's CPU kernels use (a product rounded to float before it is added, as there), so
 * the values the next product quantizes are the ones the graph run whole would give.
 */

/** y = a + b, element by element (the same length). */
export function sumInto(a: Float32Array, b: Float32Array, y: Float32Array): void {
  if (a.length !== b.length || y.length !== a.length) throw new RangeError(`a sum of ${a.length} and ${b.length} values into ${y.length}`);
  // a double sum of two floats rounds to the float sum (53 bits hold twice 24 and more)
  for (let i = 0; i < a.length; i++) y[i] = a[i]! + b[i]!;
}

/** y[r][j] += bias[j] for every row of y. */
export function addBias(y: Float32Array, bias: Float32Array): void {
  const n = bias.length;
  if (y.length % n) throw new RangeError(`a bias of ${n} values on ${y.length}`);
  for (let r = 0; r < y.length; r += n) for (let j = 0; j < n; j++) y[r + j] = y[r + j]! + bias[j]!;
}

/**
 * RMSNorm of each row of x (rows of w.length values, a multiple of 8), as ONNX Runtime's
 * SimplifiedLayerNormalization computes it on this CPU: the squares summed in 8 single-precision lanes with a
 * fused multiply-add each, the lanes added in halves (8, 4, 2, 1), s = sqrt(sum / n + epsilon), then
 * (x · (1 / s)) · w, each step rounded to float. Found by matching its outputs bit for bit
 * (test/services/inference/layer-steps.test.ts); a plain sum in order differs in the last bit of most values.
 */
export function rmsNormInto(x: Float32Array, w: Float32Array, epsilon: number, y: Float32Array): void {
  const n = w.length, f = Math.fround, eps = f(epsilon);
  if (n % LANES || x.length % n || y.length !== x.length) {
    throw new RangeError(`an RMSNorm of width ${n} on ${x.length} values into ${y.length}`);
  }
  const lanes = new Float64Array(LANES);
  for (let r = 0; r < x.length; r += n) {
    lanes.fill(0);
    // a float square is exact in a double, so the sum rounded once to float is the fused multiply-add
    for (let j = 0; j < n; j += LANES) for (let l = 0; l < LANES; l++) lanes[l] = f(lanes[l]! + x[r + j + l]! * x[r + j + l]!);
    for (let half = LANES / 2; half >= 1; half /= 2) for (let l = 0; l < half; l++) lanes[l] = f(lanes[l]! + lanes[l + half]!);
    const inv = f(1 / f(Math.sqrt(f(f(lanes[0]! / n) + eps))));
    for (let j = 0; j < n; j++) y[r + j] = f(x[r + j]! * inv) * w[j]!;
  }
}

/** Lanes ONNX Runtime's norm adds its squares in (AVX2). */
const LANES = 8;

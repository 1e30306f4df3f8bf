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
 * RMSNorm of each row of x (rows of w.length values), as ONNX Runtime's SimplifiedLayerNormalization computes
 * it on CPU: the squares summed in float one after another, s = sqrt(sum / n + epsilon) in float, then
 * x / s * w.
 */
export function rmsNormInto(x: Float32Array, w: Float32Array, epsilon: number, y: Float32Array): void {
  const n = w.length, f = Math.fround, eps = f(epsilon);
  if (x.length % n || y.length !== x.length) throw new RangeError(`an RMSNorm of width ${n} on ${x.length} values into ${y.length}`);
  for (let r = 0; r < x.length; r += n) {
    let sum = 0;
    for (let j = 0; j < n; j++) {
      const v = x[r + j]!;
      sum = f(sum + f(v * v));
    }
    const s = f(Math.sqrt(f(f(sum / n) + eps)));
    for (let j = 0; j < n; j++) y[r + j] = f(x[r + j]! / s) * w[j]!;
  }
}

/** Median wall time in milliseconds of `runs` calls of `fn` (each awaited), for the benchmark scripts. */
export async function medianTime(fn: () => unknown | Promise<unknown>, runs: number): Promise<number> {
  const t: number[] = [];
  for (let i = 0; i < runs; i++) {
    const s = performance.now();
    await fn();
    t.push(performance.now() - s);
  }
  return t.sort((a, b) => a - b)[Math.floor(t.length / 2)]!;
}

/** Types for write-benchmarks.mjs, so TypeScript benchmark scripts can call it. */
export function writeSection(title: string, body: string, file?: string): void;

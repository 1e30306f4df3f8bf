/**
 * sharp (libvips) where its native addon loads; null elsewhere (the single binary carries a stub that
 * says so), so image code can take its WASM codec path or report the capability as absent.
 */
// deno-lint-ignore no-explicit-any
type SharpFn = any;

let loading: Promise<SharpFn | null> | undefined;

export function loadSharp(): Promise<SharpFn | null> {
  loading ??= import('sharp')
    .then((m) => (m as { default?: SharpFn }).default ?? m)
    .then((fn: SharpFn & { unavailable?: boolean }) => (typeof fn === 'function' && !fn.unavailable ? fn : null))
    .catch(() => null);
  return loading;
}

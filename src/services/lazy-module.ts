/**
 * A module's functions bound before the module is loaded: the first call imports it, every call after that
 * finds it loaded. Heavy service families (PDF, images, trust) keep their libraries out of start-up this way.
 */

/** `F` as an async function with the same arguments. */
export type Lazy<F> = F extends (...a: infer A) => infer R ? (...a: A) => Promise<Awaited<R>> : never;

/** `const lazy = lazyModule(() => import('./index.ts'))`, then `export const f = lazy('f')`. */
export function lazyModule<M>(importModule: () => Promise<M>) {
  let loading: Promise<M> | undefined;
  return <K extends keyof M>(name: K): Lazy<M[K]> =>
    (async (...args: unknown[]) => ((await (loading ??= importModule()))[name] as (...a: unknown[]) => unknown)(...args)) as Lazy<M[K]>;
}

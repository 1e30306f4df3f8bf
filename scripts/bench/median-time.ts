// Kept for the scripts that import it by this name: the helpers live in helpers.ts.
export { medianTime } from './helpers.ts';

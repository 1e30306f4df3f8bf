// sharp (libvips) is a native addon a single binary cannot carry. transformers.js insists on a truthy
// sharp at load time, so this is a function that refuses when called; our own loaders see `unavailable`
// and take their WASM codec paths instead.
function sharp() {
  throw new Error('sharp (libvips) is not available in the single binary');
}
sharp.unavailable = true;
export default sharp;

/** A stream's logits in a batch are its logits alone, bit for bit, on the WASM kernels (./batch-invariance.ts). */
import { batchInvariance } from './batch-invariance.ts';

batchInvariance('wasm');

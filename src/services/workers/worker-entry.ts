/** The module every pool worker starts with: the registry of heavy operations (./operations.ts). */
import { operations } from './operations.ts';
import { serveOperations } from './serve-operations.ts';

await serveOperations(operations);

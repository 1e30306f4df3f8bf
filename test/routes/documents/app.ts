/** The app in-process and a scratch directory for one document test file, released after its tests with the OCR engines. */
import { rm } from 'node:fs/promises';
import { after, before } from 'node:test';
import { releaseOcrEngines } from '../../../src/services/ocr/ocr.ts';
import { type InProcess, inProcess, tempDir } from '../../support/server.ts';

/** Registers the file's before/after hooks; `ready` gets the app and the directory (named `prefix`…) once made. */
export function documentsApp(prefix: string, ready: (app: InProcess, dir: string) => void): void {
  let app: InProcess | undefined;
  let dir: string | undefined;
  before(async () => {
    app = await inProcess();
    dir = await tempDir(prefix);
    ready(app, dir);
  });
  after(async () => {
    await app?.close();
    await releaseOcrEngines();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
}

/**
 * Persistence of custom models (hub imports, later create/copy). Behind a small interface so it can move
 * to the database; for now one JSON file per model under `<modelsDir>/.registry/`.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { nameKey } from './names.ts';
import type { CustomModelRecord } from './spec.ts';
import { randomId } from '../../ids.ts';

export interface ModelRegistryStore {
  list(): Promise<CustomModelRecord[]>;
  /** Case-insensitive, Ollama name rules. */
  get(name: string): Promise<CustomModelRecord | undefined>;
  put(record: CustomModelRecord): Promise<void>;
  delete(name: string): Promise<boolean>;
}

export class JsonFileRegistryStore implements ModelRegistryStore {
  constructor(readonly dir: string) {}

  #file(name: string) {
    return join(this.dir, `${encodeURIComponent(nameKey(name))}.json`);
  }

  async list(): Promise<CustomModelRecord[]> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const out: CustomModelRecord[] = [];
    for (const n of names.filter((n) => n.endsWith('.json')).sort()) {
      const rec = await readJson(join(this.dir, n));
      if (rec) out.push(rec);
    }
    return out;
  }

  async get(name: string): Promise<CustomModelRecord | undefined> {
    return readJson(this.#file(name));
  }

  async put(record: CustomModelRecord): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const file = this.#file(record.name);
    // Write then rename: a reader never sees half a record.
    const tmp = `${file}.${randomId(8)}.tmp`;
    await writeFile(tmp, JSON.stringify(record, null, 2));
    await rename(tmp, file);
  }

  async delete(name: string): Promise<boolean> {
    const file = this.#file(name);
    const existed = (await readJson(file)) !== undefined;
    await rm(file, { force: true });
    return existed;
  }
}

async function readJson(file: string): Promise<CustomModelRecord | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as CustomModelRecord;
  } catch {
    return undefined;
  }
}

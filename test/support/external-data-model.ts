/**
 * A copy of a hub-layout model directory whose onnx/model.onnx keeps none of its weights inline: the real `onnx`
 * Python package (Debian python3-onnx) re-saves every initializer into one external file, onnx/model.onnx_data,
 * as exports over protobuf's 2 GB come from the hub; config.json says so as those models' configs do.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ExternalDataModel {
  /** The copy (a temporary directory): remove with `remove()`. */
  dir: string;
  /** Sizes in bytes: the original graph, the re-saved graph and its data file. */
  sizes: { original: number; graph: number; data: number };
  /** onnx's own reading of the saved graph: initializers, and how many of them are stored externally. */
  initializers: number;
  external: number;
  remove(): void;
}

const RESAVE = `
import json, sys, onnx
src, dst = sys.argv[1], sys.argv[2]
m = onnx.load(src)
onnx.save_model(m, dst, save_as_external_data=True, all_tensors_to_one_file=True, location='model.onnx_data', size_threshold=0)
g = onnx.load(dst, load_external_data=False).graph.initializer
print(json.dumps({'initializers': len(g), 'external': sum(t.data_location == onnx.TensorProto.EXTERNAL for t in g)}))
`;

/** `src` (a hub-layout directory with onnx/model.onnx) copied with the fp32 graph's weights in onnx/model.onnx_data. */
export function externalDataCopy(src: string): ExternalDataModel {
  const dir = mkdtempSync(join(tmpdir(), 'external-data-model-'));
  try {
    for (const f of readdirSync(src)) if (statSync(join(src, f)).isFile()) copyFileSync(join(src, f), join(dir, f));
    mkdirSync(join(dir, 'onnx'));
    const original = join(src, 'onnx', 'model.onnx'), graph = join(dir, 'onnx', 'model.onnx');
    const read = JSON.parse(execFileSync('/usr/bin/python3', ['-c', RESAVE, original, graph], { encoding: 'utf8' })) as {
      initializers: number;
      external: number;
    };
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    config['transformers.js_config'] = { ...config['transformers.js_config'], use_external_data_format: { 'model.onnx': 1 } };
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2));
    const sizes = { original: statSync(original).size, graph: statSync(graph).size, data: statSync(`${graph}_data`).size };
    return { dir, sizes, ...read, remove: () => rmSync(dir, { recursive: true, force: true }) };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

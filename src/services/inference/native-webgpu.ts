/**
 * Whether onnxruntime-node's own WebGPU provider (Dawn) finds an adapter in this process. It looks for one
 * itself when a session is created, and a runtime's `navigator.gpu` having one says nothing of Dawn's: Dawn
 * asks more of a Vulkan driver than Deno's wgpu does (bookworm's Mesa 22 lavapipe serves wgpu, not Dawn).
 * So one session of one Add is created on it and run once.
 */
import { node, ONNX, tensorValueInfo, WireWriter } from '../models/onnx-wire.ts';
import type { OrtWeb } from './backend.ts';

/** y = x + x over float32[4]: a model ONNX Runtime cannot fold away. */
function addModel(): Uint8Array {
  const io = (name: string) => tensorValueInfo(name, ONNX.dtype.FLOAT, [4]);
  const graph = new WireWriter()
    .message(ONNX.graph.node, node('Add', ['x', 'x'], ['y'], 'add'))
    .string(ONNX.graph.name, 'probe')
    .message(ONNX.graph.input, io('x'))
    .message(ONNX.graph.output, io('y'));
  return new WireWriter()
    .varint(ONNX.model.irVersion, 8)
    .message(ONNX.model.graph, graph)
    .message(ONNX.model.opsetImport, new WireWriter().string(ONNX.opset.domain, '').varint(ONNX.opset.version, 17))
    .finish();
}

/** Undefined when a WebGPU session runs on onnxruntime-node (`ort`), else why not (the error or a wrong sum). */
export async function nativeWebGpuFailure(ort: OrtWeb): Promise<string | undefined> {
  try {
    const s = await ort.InferenceSession.create(addModel(), { executionProviders: ['webgpu'] });
    try {
      const { y } = await s.run({ x: new ort.Tensor('float32', Float32Array.from([1, 2, 3, 4]), [4]) });
      const got = Array.from(y!.data as Float32Array);
      return `${got}` === '2,4,6,8' ? undefined : `a test addition gave ${got}`;
    } finally {
      await s.release();
    }
  } catch (e) {
    return String((e as Error)?.message ?? e);
  }
}

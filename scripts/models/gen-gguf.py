"""Write the benchmark decoder's weights as GGUF for llama.cpp, from the same torch checkpoint the ONNX files
are exported from (same config, same seed), with Qwen2's tensor names as llama.cpp's convert_hf_to_gguf.py
writes them (Qwen2 uses NeoX RoPE: q/k are not permuted).

Usage (needs the `gguf` Python package, e.g. `pip install --target .models-cache/pylib gguf`):
  PYTHONPATH=.models-cache/pylib /usr/bin/python3 scripts/models/gen-gguf.py MODEL_DIR OUT_PREFIX [q8_0,q4_0,f32]
MODEL_DIR is the one gen-tiny-models.py --shape wrote (config.json, tokenizer.json); writes OUT_PREFIX-<type>.gguf.
Every 2-D weight (the tied embedding / LM head included) takes the named type; norms and biases stay f32.
"""
import json
import os
import sys

import numpy as np
import torch

import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import CausalLM, init_weights  # noqa: E402

SEED = 2025  # gen-tiny-models.py qwen_shape


def main(model_dir, out_prefix, types):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    c = {**cfg, "qkv_bias": cfg.get("model_type") == "qwen2"}
    torch.manual_seed(SEED)
    model = CausalLM(c)
    init_weights(model, SEED, 0.02)
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}

    tok = json.load(open(os.path.join(model_dir, "tokenizer.json")))
    n_vocab = cfg["vocab_size"]
    tokens = [f"[PAD{i}]" for i in range(n_vocab)]
    types_ = [gguf.TokenType.UNUSED] * n_vocab
    for t, i in tok["model"]["vocab"].items():
        if i < n_vocab:
            tokens[i], types_[i] = t, gguf.TokenType.NORMAL
    for a in tok.get("added_tokens", []):
        if a["id"] < n_vocab:
            tokens[a["id"]], types_[a["id"]] = a["content"], gguf.TokenType.CONTROL if a.get("special") else gguf.TokenType.USER_DEFINED
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"].get("merges", [])]

    names = {"embed_tokens.weight": "token_embd.weight", "norm.weight": "output_norm.weight"}
    for i in range(cfg["num_hidden_layers"]):
        for src, dst in [("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"), ("self_attn.v_proj", "attn_v"),
                         ("self_attn.o_proj", "attn_output"), ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"),
                         ("mlp.down_proj", "ffn_down"), ("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v"),
                         ("o_proj", "attn_output"), ("gate_proj", "ffn_gate"), ("up_proj", "ffn_up"), ("down_proj", "ffn_down")]:
            for kind in ("weight", "bias"):
                names[f"layers.{i}.{src}.{kind}"] = f"blk.{i}.{dst}.{kind}"
        names[f"layers.{i}.input_layernorm.weight"] = f"blk.{i}.attn_norm.weight"
        names[f"layers.{i}.post_attention_layernorm.weight"] = f"blk.{i}.ffn_norm.weight"
    if not cfg.get("tie_word_embeddings"):
        names["lm_head.weight"] = "output.weight"

    qt = {"f32": gguf.GGMLQuantizationType.F32, "q8_0": gguf.GGMLQuantizationType.Q8_0, "q4_0": gguf.GGMLQuantizationType.Q4_0}
    ft = {"f32": gguf.LlamaFileType.ALL_F32, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0, "q4_0": gguf.LlamaFileType.MOSTLY_Q4_0}
    for t in types:
        path = f"{out_prefix}-{t}.gguf"
        w = gguf.GGUFWriter(path, "qwen2")
        w.add_name("svc-bench-qwen2.5-0.5b-shape")
        w.add_context_length(cfg["max_position_embeddings"])
        w.add_embedding_length(cfg["hidden_size"])
        w.add_feed_forward_length(cfg["intermediate_size"])
        w.add_block_count(cfg["num_hidden_layers"])
        w.add_head_count(cfg["num_attention_heads"])
        w.add_head_count_kv(cfg["num_key_value_heads"])
        w.add_rope_freq_base(cfg["rope_theta"])
        w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
        w.add_file_type(ft[t])
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("qwen2")
        w.add_token_list(tokens)
        w.add_token_types(types_)
        w.add_token_merges(merges)
        eos = cfg["eos_token_id"]
        w.add_eos_token_id(eos[0] if isinstance(eos, list) else eos)
        if cfg.get("pad_token_id") is not None:
            w.add_pad_token_id(cfg["pad_token_id"])
        w.add_add_bos_token(False)
        written = set()
        for k, v in sd.items():
            if k not in names or names[k] in written:
                continue
            written.add(names[k])
            if v.ndim == 2 and t != "f32":
                data = gguf.quants.quantize(v, qt[t])
                w.add_tensor(names[k], data, raw_shape=data.shape, raw_dtype=qt[t])
            else:
                w.add_tensor(names[k], v)
        missing = [k for k in sd if k not in names and not (k == "lm_head.weight" and cfg.get("tie_word_embeddings"))]
        assert not missing, f"unmapped tensors: {missing}"
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        print(f"wrote {path} ({os.path.getsize(path) / 1e9:.2f} GB)")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else "q8_0,q4_0").split(","))

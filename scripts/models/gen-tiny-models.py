#!/usr/bin/python3
"""Generate tiny random models with real architectures and the model hub's file layout.

    /usr/bin/python3 scripts/models/gen-tiny-models.py                 # -> test/fixtures/models/{tiny-llama,tiny-bert-embed,tiny-bert-reranker}
    /usr/bin/python3 scripts/models/gen-tiny-models.py --out DIR       # same, elsewhere
    /usr/bin/python3 scripts/models/gen-tiny-models.py --shape qwen2.5-0.5b DIR [--layers N] [--dtypes fp32,q8,q4]
                                                                       # benchmark model, never committed
    /usr/bin/python3 scripts/models/gen-tiny-models.py --shape qwen2.5-1.5b DIR --dtypes q4   # the larger GPU benchmark shape

Needs Debian's python3-torch, python3-onnx, python3-numpy. Fixed seeds: regenerating gives identical files.
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx
import torch

sys.dont_write_bytecode = True  # keep scripts/ clean of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tok_builders import (train_bpe, synthetic_merges, byte_bpe_tokenizer_json, wordpiece_vocab,  # noqa: E402
                          wordpiece_tokenizer_json)
from torch_models import CausalLM, Bert, LogitsToKeep, TORCHSCRIPT, init_weights  # noqa: E402
from quantize import quantize_q8, quantize_q4, quantize_gather_q8  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OPSET = 17
CHATML_SPECIALS = [("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
                   ("<tool_call>", False), ("</tool_call>", False), ("<tool_response>", False),
                   ("</tool_response>", False), ("<think>", False), ("</think>", False)]


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False, sort_keys=False)
        f.write("\n")


def chat_template():
    with open(os.path.join(HERE, "chatml-tools-thinking.jinja")) as f:
        return f.read()


def add_past_key_values(c, past_len, args, in_names, out_names, dyn):
    """The KV-cache inputs (zeros, `past_len` long) and outputs of every layer, named as transformers.js expects."""
    for i in range(c["num_hidden_layers"]):
        for kv in ("key", "value"):
            args.append(torch.zeros(1, c["num_key_value_heads"], past_len, c["head_dim"]))
            in_names.append(f"past_key_values.{i}.{kv}")
            out_names.append(f"present.{i}.{kv}")
            dyn[in_names[-1]] = {0: "batch_size", 2: "past_sequence_length"}
            dyn[out_names[-1]] = {0: "batch_size", 2: "total_sequence_length"}


def export_decoder(model, c, path):
    ids = torch.tensor([[1, 2, 3]], dtype=torch.int64)
    past_len = 2
    am = torch.ones(1, 3 + past_len, dtype=torch.int64)
    pos = torch.arange(past_len, past_len + 3, dtype=torch.int64)[None]
    past = []
    keep = torch.tensor(0, dtype=torch.int64)
    in_names, out_names = ["input_ids", "attention_mask", "position_ids", "num_logits_to_keep"], ["logits"]
    dyn = {"input_ids": {0: "batch_size", 1: "sequence_length"},
           "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
           "position_ids": {0: "batch_size", 1: "sequence_length"},
           "logits": {0: "batch_size", 1: "num_logits"}}
    add_past_key_values(c, past_len, past, in_names, out_names, dyn)
    model.eval()
    with torch.no_grad():
        torch.onnx.export(LogitsToKeep(model), (ids, am, pos, keep, *past), path, input_names=in_names, output_names=out_names,
                          dynamic_axes=dyn, opset_version=OPSET, do_constant_folding=True, **TORCHSCRIPT)


def export_bert(model, path, classifier):
    ids = torch.tensor([[2, 10, 11, 3]], dtype=torch.int64)
    am = torch.ones_like(ids)
    tt = torch.zeros_like(ids)
    out = "logits" if classifier else "last_hidden_state"
    dyn = {n: {0: "batch_size", 1: "sequence_length"} for n in ("input_ids", "attention_mask", "token_type_ids")}
    dyn[out] = {0: "batch_size"} if classifier else {0: "batch_size", 1: "sequence_length"}
    model.eval()
    with torch.no_grad():
        torch.onnx.export(model, (ids, am, tt), path, input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=[out], dynamic_axes=dyn, opset_version=OPSET, do_constant_folding=True, **TORCHSCRIPT)


def strip_doc(path):
    """torch writes nothing run-specific except doc strings/producer; normalise so regeneration is identical."""
    m = onnx.load(path)
    m.producer_version = ""
    for n in m.graph.node:
        n.doc_string = ""
    onnx.save(m, path)


def chatml_tokenizer_files(out, vocab, merges, model_max_length):
    tok, v = byte_bpe_tokenizer_json(vocab, merges, CHATML_SPECIALS)
    write_json(os.path.join(out, "tokenizer.json"), tok)
    write_json(os.path.join(out, "tokenizer_config.json"), {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": model_max_length,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "errors": "replace",
        "split_special_tokens": False,
        "chat_template": chat_template(),
    })
    return v


def decoder_model(out, c, vocab, merges, seed, dtypes=("fp32",), layers_note=None):
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    v = chatml_tokenizer_files(out, vocab, merges, c["max_position_embeddings"])
    eos = [v["<|im_end|>"], v["<|endoftext|>"]]
    c = {**c, "bos_token_id": None, "eos_token_id": eos[0], "pad_token_id": v["<|endoftext|>"]}
    torch.manual_seed(seed)
    model = CausalLM(c)
    init_weights(model, seed, std=c.pop("init_std"))
    config = {k: c[k] for k in c if k != "qkv_bias"}
    config["transformers.js_config"] = {"use_external_data_format": False}
    write_json(os.path.join(out, "generation_config.json"), {
        "bos_token_id": None, "eos_token_id": eos, "pad_token_id": v["<|endoftext|>"], "do_sample": True,
        "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05,
    })
    fp32 = os.path.join(out, "onnx", "model.onnx")
    export_decoder(model, c, fp32)
    m = onnx.load(fp32)
    big = sum(t.ByteSize() for t in m.graph.initializer) > 1_500_000_000
    if big:  # >2 GB protobuf limit: one external data file, as the hub's big exports do
        config["transformers.js_config"] = {"use_external_data_format": {"model.onnx": 1}}
        save(m, fp32, external=True)  # also clears torch's one-file-per-tensor leftovers
    else:
        strip_doc(fp32)
    del m
    for t in dtypes:
        if t == "fp32":
            continue
        q = onnx.load(fp32)
        q = quantize_q8(q) if t == "q8" else quantize_q4(q)
        q = quantize_gather_q8(q)
        name = {"q8": "model_quantized.onnx", "q4": "model_q4.onnx"}[t]
        save(q, os.path.join(out, "onnx", name))
    if "fp32" not in dtypes:
        for f in os.listdir(os.path.join(out, "onnx")):
            if f.startswith("model.onnx"):
                os.remove(os.path.join(out, "onnx", f))
        config["transformers.js_config"] = {"use_external_data_format": False}
    write_json(os.path.join(out, "config.json"), config)


def save(m, path, external=False):
    for f in os.listdir(os.path.dirname(path)):  # torch's one-file-per-tensor leftovers
        full = os.path.join(os.path.dirname(path), f)
        if not f.endswith(".onnx") and not f.endswith(".onnx_data") and os.path.isfile(full):
            os.remove(full)
    m.producer_version = ""
    if external:
        onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(path) + "_data", size_threshold=1024)
    else:
        onnx.save(m, path)


def tiny_llama(root):
    vocab, merges = train_bpe(220)
    c = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": len(vocab) + len(CHATML_SPECIALS),
        "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 8, "max_position_embeddings": 512, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "tie_word_embeddings": False, "hidden_act": "silu", "torch_dtype": "float32",
        "init_std": 0.5,  # large enough that the random model's distribution is far from uniform
    }
    decoder_model(os.path.join(root, "tiny-llama"), c, vocab, merges, seed=1234, dtypes=("fp32", "q8", "q4"))


# Qwen2.5's published shapes (config.json of Qwen/Qwen2.5-0.5B and -1.5B); both tie the LM head to the embedding
QWEN_SHAPES = {
    "qwen2.5-0.5b": {"hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
                     "num_key_value_heads": 2, "head_dim": 64},
    "qwen2.5-1.5b": {"hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28, "num_attention_heads": 12,
                     "num_key_value_heads": 2, "head_dim": 128},
}


def qwen_shape(out, shape, layers, dtypes):
    """A Qwen2.5 shape (151936 vocab, tied embeddings, QKV bias), random weights."""
    vocab, merges = train_bpe(220)
    vocab, merges = synthetic_merges(vocab, merges, 151936 - len(CHATML_SPECIALS))
    dims = QWEN_SHAPES[shape]
    c = {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 151936,
        **dims, "num_hidden_layers": layers or dims["num_hidden_layers"], "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": True, "hidden_act": "silu",
        "torch_dtype": "float32", "qkv_bias": True, "init_std": 0.02,
    }
    decoder_model(out, c, vocab, merges, seed=2025, dtypes=dtypes)


def bert_common(out, c, classifier, seed):
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    vocab = wordpiece_vocab()
    c = {**c, "vocab_size": len(vocab), "pad_token_id": 0}
    write_json(os.path.join(out, "tokenizer.json"), wordpiece_tokenizer_json(vocab, c["max_position_embeddings"]))
    write_json(os.path.join(out, "tokenizer_config.json"), {
        "tokenizer_class": "BertTokenizer", "model_max_length": c["max_position_embeddings"], "do_lower_case": True,
        "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]", "mask_token": "[MASK]",
        "clean_up_tokenization_spaces": True,
    })
    write_json(os.path.join(out, "config.json"), c)
    write_json(os.path.join(out, "generation_config.json"), {"pad_token_id": 0})
    torch.manual_seed(seed)
    model = Bert(c, classifier=classifier)
    init_weights(model, seed, std=0.2)
    path = os.path.join(out, "onnx", "model.onnx")
    export_bert(model, path, classifier)
    strip_doc(path)


BERT = {"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 64, "max_position_embeddings": 64, "type_vocab_size": 2, "hidden_act": "gelu",
        "layer_norm_eps": 1e-12, "torch_dtype": "float32"}


def tiny_bert_embed(root):
    out = os.path.join(root, "tiny-bert-embed")
    bert_common(out, {"architectures": ["BertModel"], **BERT}, False, seed=42)
    # sentence-transformers layout: how transformers.js' users (and we) learn pooling + normalisation
    write_json(os.path.join(out, "modules.json"), [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    write_json(os.path.join(out, "1_Pooling", "config.json"), {
        "word_embedding_dimension": BERT["hidden_size"], "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False})
    write_json(os.path.join(out, "sentence_bert_config.json"), {"max_seq_length": 64, "do_lower_case": False})


def tiny_bert_reranker(root):
    bert_common(os.path.join(root, "tiny-bert-reranker"),
                {"architectures": ["BertForSequenceClassification"], **BERT, "id2label": {"0": "LABEL_0"},
                 "label2id": {"LABEL_0": 0}}, True, seed=7)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "test", "fixtures", "models"))
    ap.add_argument("--shape", choices=list(QWEN_SHAPES))
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--layers", type=int, default=0, help="with --shape: fewer layers for a quick check")
    ap.add_argument("--dtypes", default="fp32,q8,q4", help="with --shape: which files to write")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.shape:
        if not a.dir:
            ap.error("--shape needs an output directory")
        qwen_shape(a.dir, a.shape, a.layers, a.dtypes.split(","))
        return
    os.makedirs(a.out, exist_ok=True)
    tiny_llama(a.out)
    tiny_bert_embed(a.out)
    tiny_bert_reranker(a.out)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Generate a tiny random-weight Whisper (real architecture, the hub's transformers.js file layout).

    /usr/bin/python3 scripts/models/gen-tiny-whisper.py            # -> test/fixtures/models/tiny-whisper
    /usr/bin/python3 scripts/models/gen-tiny-whisper.py --out DIR

Files: onnx/encoder_model.onnx (input_features -> last_hidden_state) and onnx/decoder_model_merged.onnx
(input_ids, encoder_hidden_states, past_key_values.{i}.{decoder,encoder}.{key,value} ->
logits, present.*), as transformers.js' seq2seq loader expects. The "merged" decoder needs no If node: the
cross-attention keys/values are `concat(past, project(encoder_hidden_states)[past_len:])`, i.e. computed on the
first step (empty past) and passed through afterwards. Multilingual token layout like openai/whisper-*:
byte-level BPE, <|endoftext|>, <|startoftranscript|>, language tokens, <|translate|>, <|transcribe|>,
<|startoflm|>, <|startofprev|>, <|nocaptions|>, <|notimestamps|>, then 1501 timestamp tokens <|0.00|>..<|30.00|>.
Needs Debian's python3-torch and python3-onnx. Fixed seeds.
"""
import argparse
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tok_builders import train_bpe, byte_bpe_tokenizer_json  # noqa: E402
import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location("gen_tiny_models", os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen-tiny-models.py"))
_gtm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gtm)
write_json, strip_doc, init_weights = _gtm.write_json, _gtm.strip_doc, _gtm.init_weights

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OPSET = 17
LANGS = ["en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "it"]
N_MELS, D, HEADS, ENC_LAYERS, DEC_LAYERS, FFN = 80, 32, 2, 1, 2, 64
SRC_POS, TGT_POS = 1500, 448


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.h, self.hd = HEADS, D // HEADS
        self.q_proj = nn.Linear(D, D)
        self.k_proj = nn.Linear(D, D, bias=False)
        self.v_proj = nn.Linear(D, D)
        self.out_proj = nn.Linear(D, D)

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.h, self.hd).transpose(1, 2)

    def attend(self, q, k, v, mask=None):
        w = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd)
        if mask is not None:
            w = w + mask
        o = torch.softmax(w, dim=-1) @ v
        b, _, t, _ = o.shape
        return self.out_proj(o.transpose(1, 2).reshape(b, t, D))


class EncLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn, self.self_attn_layer_norm = Attn(), nn.LayerNorm(D)
        self.fc1, self.fc2, self.final_layer_norm = nn.Linear(D, FFN), nn.Linear(FFN, D), nn.LayerNorm(D)

    def forward(self, x):
        h = self.self_attn_layer_norm(x)
        a = self.self_attn
        x = x + a.attend(a.split(a.q_proj(h)), a.split(a.k_proj(h)), a.split(a.v_proj(h)))
        return x + self.fc2(F.gelu(self.fc1(self.final_layer_norm(x))))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(N_MELS, D, 3, padding=1)
        self.conv2 = nn.Conv1d(D, D, 3, stride=2, padding=1)
        self.embed_positions = nn.Parameter(torch.zeros(SRC_POS, D))
        self.layers = nn.ModuleList([EncLayer() for _ in range(ENC_LAYERS)])
        self.layer_norm = nn.LayerNorm(D)

    def forward(self, input_features):
        x = F.gelu(self.conv2(F.gelu(self.conv1(input_features)))).transpose(1, 2)
        x = x + self.embed_positions[: x.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.layer_norm(x)


class DecLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn, self.self_attn_layer_norm = Attn(), nn.LayerNorm(D)
        self.encoder_attn, self.encoder_attn_layer_norm = Attn(), nn.LayerNorm(D)
        self.fc1, self.fc2, self.final_layer_norm = nn.Linear(D, FFN), nn.Linear(FFN, D), nn.LayerNorm(D)

    def forward(self, x, enc, mask, pdk, pdv, pek, pev):
        a = self.self_attn
        h = self.self_attn_layer_norm(x)
        k = torch.cat([pdk, a.split(a.k_proj(h))], dim=2)
        v = torch.cat([pdv, a.split(a.v_proj(h))], dim=2)
        x = x + a.attend(a.split(a.q_proj(h)), k, v, mask)
        c = self.encoder_attn
        h = self.encoder_attn_layer_norm(x)
        # Cross keys/values: projected on the first step (empty past), passed through afterwards.
        past_len = pek.shape[2]
        ek = torch.cat([pek, c.split(c.k_proj(enc))[:, :, past_len:]], dim=2)
        ev = torch.cat([pev, c.split(c.v_proj(enc))[:, :, past_len:]], dim=2)
        x = x + c.attend(c.split(c.q_proj(h)), ek, ev)
        x = x + self.fc2(F.gelu(self.fc1(self.final_layer_norm(x))))
        return x, k, v, ek, ev


class Decoder(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, D)
        self.embed_positions = nn.Parameter(torch.zeros(TGT_POS, D))
        self.layers = nn.ModuleList([DecLayer() for _ in range(DEC_LAYERS)])
        self.layer_norm = nn.LayerNorm(D)

    def forward(self, input_ids, encoder_hidden_states, *past):
        t = input_ids.shape[1]
        p = past[0].shape[2]
        pos = torch.arange(t, dtype=torch.int64) + p
        x = self.embed_tokens(input_ids) + self.embed_positions[pos]
        # causal mask over [past + new]: new token i sees past and new tokens <= i
        qi = torch.arange(t, dtype=torch.int64)[:, None] + p
        kj = torch.arange(t + p, dtype=torch.int64)[None, :]
        mask = torch.where(kj <= qi, torch.tensor(0.0), torch.tensor(-1e9))[None, None]
        presents = []
        for i, layer in enumerate(self.layers):
            x, k, v, ek, ev = layer(x, encoder_hidden_states, mask, *past[4 * i: 4 * i + 4])
            presents += [k, v, ek, ev]
        logits = self.layer_norm(x) @ self.embed_tokens.weight.T
        return (logits, *presents)


def tokenizer_files(out):
    vocab, merges = train_bpe(120)
    specials = ["<|endoftext|>", "<|startoftranscript|>"] + [f"<|{l}|>" for l in LANGS] + [
        "<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nocaptions|>", "<|notimestamps|>"]
    stamps = [f"<|{i * 0.02:.2f}|>" for i in range(1501)]
    tok, v = byte_bpe_tokenizer_json(vocab, merges, [(s, True) for s in specials] + [(s, False) for s in stamps])
    tok["post_processor"] = {"type": "TemplateProcessing",
                             "single": [{"SpecialToken": {"id": "<|startoftranscript|>", "type_id": 0}},
                                        {"SpecialToken": {"id": "<|notimestamps|>", "type_id": 0}},
                                        {"Sequence": {"id": "A", "type_id": 0}},
                                        {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}],
                             "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                             "special_tokens": {s: {"id": s, "ids": [v[s]], "tokens": [s]} for s in
                                                ("<|startoftranscript|>", "<|notimestamps|>", "<|endoftext|>")}}
    write_json(os.path.join(out, "tokenizer.json"), tok)
    write_json(os.path.join(out, "tokenizer_config.json"), {
        "tokenizer_class": "WhisperTokenizer", "model_max_length": 1024, "bos_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
        "add_prefix_space": False, "clean_up_tokenization_spaces": True, "errors": "replace",
        "additional_special_tokens": specials[1:],
    })
    return v, len(vocab) + len(specials) + len(stamps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "test", "fixtures", "models", "tiny-whisper"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    out = a.out
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    v, vocab_size = tokenizer_files(out)
    eot, sot, notimestamps = v["<|endoftext|>"], v["<|startoftranscript|>"], v["<|notimestamps|>"]
    write_json(os.path.join(out, "config.json"), {
        "architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper", "vocab_size": vocab_size,
        "num_mel_bins": N_MELS, "d_model": D, "encoder_layers": ENC_LAYERS, "decoder_layers": DEC_LAYERS,
        "encoder_attention_heads": HEADS, "decoder_attention_heads": HEADS, "encoder_ffn_dim": FFN,
        "decoder_ffn_dim": FFN, "max_source_positions": SRC_POS, "max_target_positions": TGT_POS,
        "is_encoder_decoder": True, "bos_token_id": eot, "eos_token_id": eot, "pad_token_id": eot,
        "decoder_start_token_id": sot, "activation_function": "gelu", "scale_embedding": False,
        "torch_dtype": "float32", "transformers.js_config": {"use_external_data_format": False},
    })
    write_json(os.path.join(out, "generation_config.json"), {
        "bos_token_id": eot, "eos_token_id": eot, "pad_token_id": eot, "decoder_start_token_id": sot,
        "max_length": TGT_POS, "is_multilingual": True, "no_timestamps_token_id": notimestamps,
        "prev_sot_token_id": v["<|startofprev|>"], "max_initial_timestamp_index": 50,
        "begin_suppress_tokens": [v["Ġ"], eot], "suppress_tokens": [],
        "lang_to_id": {f"<|{l}|>": v[f"<|{l}|>"] for l in LANGS},
        "task_to_id": {"transcribe": v["<|transcribe|>"], "translate": v["<|translate|>"]},
        "forced_decoder_ids": [[1, None], [2, v["<|transcribe|>"]]],
    })
    write_json(os.path.join(out, "preprocessor_config.json"), {
        "feature_extractor_type": "WhisperFeatureExtractor", "processor_class": "WhisperProcessor",
        "feature_size": N_MELS, "sampling_rate": 16000, "hop_length": 160, "chunk_length": 30, "n_fft": 400,
        "n_samples": 480000, "nb_max_frames": 3000, "padding_side": "right", "padding_value": 0.0,
        "return_attention_mask": False,
    })

    torch.manual_seed(77)
    enc, dec = Encoder(), Decoder(vocab_size)
    init_weights(enc, 77, std=0.2)
    init_weights(dec, 78, std=0.5)
    enc.eval()
    dec.eval()
    hd = D // HEADS
    with torch.no_grad():
        feats = torch.randn(1, N_MELS, 3000)
        p = os.path.join(out, "onnx", "encoder_model.onnx")
        torch.onnx.export(enc, (feats,), p, input_names=["input_features"], output_names=["last_hidden_state"],
                          dynamic_axes={"input_features": {0: "batch_size"}, "last_hidden_state": {0: "batch_size"}},
                          opset_version=OPSET, do_constant_folding=True)
        strip_doc(p)
        hs = enc(feats)
        ids = torch.tensor([[sot, v["<|en|>"]]], dtype=torch.int64)
        past, in_names, out_names = [], ["input_ids", "encoder_hidden_states"], ["logits"]
        dyn = {"input_ids": {0: "batch_size", 1: "decoder_sequence_length"},
               "encoder_hidden_states": {0: "batch_size", 1: "encoder_sequence_length / 2"},
               "logits": {0: "batch_size", 1: "decoder_sequence_length"}}
        for i in range(DEC_LAYERS):
            for part in ("decoder", "encoder"):
                for kv in ("key", "value"):
                    n = 3 if part == "decoder" else 0
                    past.append(torch.zeros(1, HEADS, n, hd))
                    in_names.append(f"past_key_values.{i}.{part}.{kv}")
                    out_names.append(f"present.{i}.{part}.{kv}")
                    seq = "past_decoder_sequence_length" if part == "decoder" else "encoder_sequence_length_out"
                    dyn[in_names[-1]] = {0: "batch_size", 2: seq}
                    dyn[out_names[-1]] = {0: "batch_size", 2: seq + "_present"}
        p = os.path.join(out, "onnx", "decoder_model_merged.onnx")
        torch.onnx.export(dec, (ids, hs, *past), p, input_names=in_names,
                          output_names=out_names, dynamic_axes=dyn, opset_version=OPSET, do_constant_folding=True)
        strip_doc(p)
    for f in os.listdir(os.path.join(out, "onnx")):  # torch's one-file-per-tensor leftovers
        if not f.endswith(".onnx"):
            os.remove(os.path.join(out, "onnx", f))


if __name__ == "__main__":
    main()

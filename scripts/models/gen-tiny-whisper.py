#!/usr/bin/python3
"""Generate a tiny random-weight Whisper (real architecture, the hub's transformers.js file layout).

    /usr/bin/python3 scripts/models/gen-tiny-whisper.py            # -> test/fixtures/models/tiny-whisper
    /usr/bin/python3 scripts/models/gen-tiny-whisper.py --out DIR
    /usr/bin/python3 scripts/models/gen-tiny-whisper.py --shape whisper-tiny --out DIR --dtypes fp32,q8 \
        --ggml DIR/ggml-f16.bin --ggml-q8 DIR/ggml-q8_0.bin

--shape whisper-tiny: openai/whisper-tiny's dimensions (d_model 384, 6 heads, 4+4 layers, FFN 1536) and its
exact token layout (50257 text tokens, <|endoftext|> 50257, 99 languages, <|notimestamps|> 50363, timestamps
from 50364; vocabulary 51865), still random weights, for speed comparisons. Its text tokens are " w<id>"
(so a decoded text counts its tokens), and the weights never pick a special, byte or timestamp token: random
weights never stop by themselves, so each runtime decodes exactly the token budget it is given.
--ggml PATH also writes the same checkpoint as a whisper.cpp model file (the layout of whisper.cpp's
models/convert-pt-to-ggml.py: magic, hyper-parameters, mel filters, vocabulary, then named tensors; matrices
and convolutions in float16 as that script writes them); --ggml-q8 PATH the same with the matrices in Q8_0
(blocks of 32 int8 with a float16 scale, what whisper.cpp's quantize tool writes for q8_0).
--dtypes fp32,q8 adds encoder_model_quantized.onnx / decoder_model_merged_quantized.onnx (transformers.js' q8).

Files: onnx/encoder_model.onnx (input_features -> last_hidden_state) and onnx/decoder_model_merged.onnx
(input_ids, encoder_hidden_states, past_key_values.{i}.{decoder,encoder}.{key,value} ->
logits, present.*, cross_attentions.{i}), as transformers.js' seq2seq loader expects; the cross-attention
weights and generation_config's alignment_heads give word timestamps, as the hub's *_timestamped exports do. The "merged" decoder needs no If node: the
cross-attention keys/values are `concat(past, project(encoder_hidden_states[past_len:]))`, i.e. computed on the
first step (empty past) and passed through afterwards (later steps project zero rows). Multilingual token layout like openai/whisper-*:
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
write_json, strip_doc, init_weights, TORCHSCRIPT = _gtm.write_json, _gtm.strip_doc, _gtm.init_weights, _gtm.TORCHSCRIPT

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OPSET = 17
LANGS = ["en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "it"]
N_MELS, D, HEADS, ENC_LAYERS, DEC_LAYERS, FFN = 80, 32, 2, 1, 2, 64
SRC_POS, TGT_POS = 1500, 448
# openai/whisper-tiny: the 99 language tokens in Whisper's order; 50257 text tokens before <|endoftext|>.
TINY = dict(D=384, HEADS=6, ENC_LAYERS=4, DEC_LAYERS=4, FFN=1536)
TINY_LANGS = ("en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no th ur hr bg lt la mi ml "
              "cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw gl mr pa si km sn yo so af oc ka be tg sd gu "
              "am yi lo uz fo ht ps tk nn mt sa lb my bo tl mg as tt haw ln ha ba jw su").split()
TINY_TEXT_TOKENS = 50257


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

    def attend(self, q, k, v, mask=None, weights=False):
        w = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd)
        if mask is not None:
            w = w + mask
        p = torch.softmax(w, dim=-1)
        o = p @ v
        b, _, t, _ = o.shape
        o = self.out_proj(o.transpose(1, 2).reshape(b, t, D))
        return (o, p) if weights else o


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
        # Cross keys/values: projected on the first step (empty past), passed through afterwards. The encoder
        # rows are cut before the projection, so later steps project nothing (as the hub's If-node exports do).
        rest = enc[:, pek.shape[2]:]
        ek = torch.cat([pek, c.split(c.k_proj(rest))], dim=2)
        ev = torch.cat([pev, c.split(c.v_proj(rest))], dim=2)
        o, cross = c.attend(c.split(c.q_proj(h)), ek, ev, weights=True)
        x = x + o
        x = x + self.fc2(F.gelu(self.fc1(self.final_layer_norm(x))))
        return x, k, v, ek, ev, cross


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
        presents, crosses = [], []
        for i, layer in enumerate(self.layers):
            x, k, v, ek, ev, cross = layer(x, encoder_hidden_states, mask, *past[4 * i: 4 * i + 4])
            presents += [k, v, ek, ev]
            crosses.append(cross)
        logits = self.layer_norm(x) @ self.embed_tokens.weight.T
        # Cross-attention weights (as the hub's *_timestamped exports give them): word timestamps by DTW.
        return (logits, *presents, *crosses)


def tokenizer_files(out, tiny=False):
    if tiny:
        # 256 byte tokens, then " w<id>" words up to Whisper's 50257 text tokens (no merges: never encoded)
        from tok_builders import bytes_to_unicode
        b2u = bytes_to_unicode()
        vocab = [b2u[b] for b in range(256)] + [f"{b2u[32]}w{i}" for i in range(256, TINY_TEXT_TOKENS)]
        merges = []
    else:
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


def mel_filters(sr=16000, n_fft=400, n_mels=80):
    """Slaney-style mel filter bank (librosa.filters.mel's defaults, which Whisper uses): [n_mels, n_fft/2+1]."""
    import numpy as np
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, math.log(6.4) / 27.0

    def hz_to_mel(f):
        return min_log_mel + math.log(f / min_log_hz) / logstep if f >= min_log_hz else f / f_sp

    def mel_to_hz(m):
        return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)

    fft = np.linspace(0, sr / 2, 1 + n_fft // 2)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2), n_mels + 2))
    fdiff, ramps = np.diff(mel_f), mel_f[:, None] - fft[None, :]
    w = np.zeros((n_mels, len(fft)))
    for i in range(n_mels):
        w[i] = np.maximum(0, np.minimum(-ramps[i] / fdiff[i], ramps[i + 2] / fdiff[i + 1]))
    return (w * (2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels]))[:, None]).astype(np.float32)


def ggml_tensors(enc, dec):
    """(whisper name, tensor) pairs of the checkpoint, in openai/whisper's parameter names."""
    out = [("encoder.positional_embedding", enc.embed_positions), ("encoder.conv1.weight", enc.conv1.weight),
           ("encoder.conv1.bias", enc.conv1.bias), ("encoder.conv2.weight", enc.conv2.weight),
           ("encoder.conv2.bias", enc.conv2.bias)]
    attn = lambda p, a: [(f"{p}.query.weight", a.q_proj.weight), (f"{p}.query.bias", a.q_proj.bias),
                         (f"{p}.key.weight", a.k_proj.weight), (f"{p}.value.weight", a.v_proj.weight),
                         (f"{p}.value.bias", a.v_proj.bias), (f"{p}.out.weight", a.out_proj.weight),
                         (f"{p}.out.bias", a.out_proj.bias)]
    mlp = lambda p, l: [(f"{p}.mlp_ln.weight", l.final_layer_norm.weight), (f"{p}.mlp_ln.bias", l.final_layer_norm.bias),
                        (f"{p}.mlp.0.weight", l.fc1.weight), (f"{p}.mlp.0.bias", l.fc1.bias),
                        (f"{p}.mlp.2.weight", l.fc2.weight), (f"{p}.mlp.2.bias", l.fc2.bias)]
    for i, l in enumerate(enc.layers):
        p = f"encoder.blocks.{i}"
        out += attn(f"{p}.attn", l.self_attn) + [(f"{p}.attn_ln.weight", l.self_attn_layer_norm.weight),
                                                (f"{p}.attn_ln.bias", l.self_attn_layer_norm.bias)] + mlp(p, l)
    out += [("encoder.ln_post.weight", enc.layer_norm.weight), ("encoder.ln_post.bias", enc.layer_norm.bias),
            ("decoder.positional_embedding", dec.embed_positions), ("decoder.token_embedding.weight", dec.embed_tokens.weight)]
    for i, l in enumerate(dec.layers):
        p = f"decoder.blocks.{i}"
        out += attn(f"{p}.attn", l.self_attn) + [(f"{p}.attn_ln.weight", l.self_attn_layer_norm.weight),
                                                (f"{p}.attn_ln.bias", l.self_attn_layer_norm.bias)]
        out += attn(f"{p}.cross_attn", l.encoder_attn) + [(f"{p}.cross_attn_ln.weight", l.encoder_attn_layer_norm.weight),
                                                         (f"{p}.cross_attn_ln.bias", l.encoder_attn_layer_norm.bias)] + mlp(p, l)
    return out + [("decoder.ln.weight", dec.layer_norm.weight), ("decoder.ln.bias", dec.layer_norm.bias)]


GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8
# Tensors whisper.cpp always keeps in float32 (convert-pt-to-ggml.py writes them so).
GGML_KEEP_F32 = {"encoder.conv1.bias", "encoder.conv2.bias", "encoder.positional_embedding", "decoder.positional_embedding"}


def q8_0_blocks(x):
    """ggml's Q8_0 of rows whose length is a multiple of 32: per block a float16 scale then 32 int8."""
    import numpy as np
    b = x.reshape(-1, 32).astype(np.float32)
    d = np.abs(b).max(1) / 127.0
    q = np.round(b / np.where(d == 0, 1, d)[:, None]).clip(-127, 127).astype(np.int8)
    out = np.zeros(len(b), dtype=[("d", "<f2"), ("qs", "i1", 32)])
    out["d"], out["qs"] = d.astype(np.float16), q
    return out.tobytes()


def write_ggml(path, enc, dec, vocab_size, text_tokens, q8=False):
    """whisper.cpp's model file: little-endian int32 fields, dims innermost first, tensors typed as above."""
    import struct
    import numpy as np
    with open(path, "wb") as f:
        i32 = lambda *xs: f.write(struct.pack(f"<{len(xs)}i", *xs))
        # file type: 1 = mostly float16, 7 = mostly Q8_0
        i32(0x67676D6C, vocab_size, SRC_POS, D, HEADS, ENC_LAYERS, TGT_POS, D, HEADS, DEC_LAYERS, N_MELS, 7 if q8 else 1)
        mel = mel_filters(n_mels=N_MELS)
        i32(*mel.shape)
        f.write(mel.tobytes())
        i32(len(text_tokens))
        for t in text_tokens:
            i32(len(t))
            f.write(t)
        for name, t in ggml_tensors(enc, dec):
            data = t.detach().float().numpy()
            if name in ("encoder.conv1.bias", "encoder.conv2.bias"):
                data = data.reshape(-1, 1)  # whisper.cpp adds them as [1, n_state]
            kind = GGML_F32 if data.ndim < 2 or name in GGML_KEEP_F32 else GGML_Q8_0 if q8 and data.ndim == 2 else GGML_F16
            nb = name.encode()
            i32(data.ndim, len(nb), kind, *reversed(data.shape))
            f.write(nb)
            if kind == GGML_Q8_0:
                f.write(q8_0_blocks(np.ascontiguousarray(data)))
            else:
                f.write(np.ascontiguousarray(data, dtype="<f2" if kind == GGML_F16 else "<f4").tobytes())


def main():
    global D, HEADS, ENC_LAYERS, DEC_LAYERS, FFN, LANGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "test", "fixtures", "models", "tiny-whisper"))
    ap.add_argument("--shape", choices=["fixture", "whisper-tiny"], default="fixture")
    ap.add_argument("--ggml", help="also write the checkpoint as a whisper.cpp model file (float16) here")
    ap.add_argument("--ggml-q8", help="also write the checkpoint as a whisper.cpp Q8_0 model file here")
    ap.add_argument("--dtypes", default="fp32", help="fp32 and/or q8 ONNX files")
    a = ap.parse_args()
    tiny = a.shape == "whisper-tiny"
    if tiny:
        D, HEADS, ENC_LAYERS, DEC_LAYERS, FFN = (TINY[k] for k in ("D", "HEADS", "ENC_LAYERS", "DEC_LAYERS", "FFN"))
        LANGS = TINY_LANGS
    torch.set_num_threads(1)
    out = a.out
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    v, vocab_size = tokenizer_files(out, tiny)
    if tiny:
        assert vocab_size == 51865 and v["<|endoftext|>"] == 50257 and v["<|notimestamps|>"] == 50363, "whisper-tiny's layout"
    eot, sot, notimestamps = v["<|endoftext|>"], v["<|startoftranscript|>"], v["<|notimestamps|>"]
    write_json(os.path.join(out, "config.json"), {
        "architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper", "vocab_size": vocab_size,
        "num_mel_bins": N_MELS, "d_model": D, "encoder_layers": ENC_LAYERS, "decoder_layers": DEC_LAYERS,
        "encoder_attention_heads": HEADS, "decoder_attention_heads": HEADS, "encoder_ffn_dim": FFN,
        "decoder_ffn_dim": FFN, "max_source_positions": SRC_POS, "max_target_positions": TGT_POS,
        "is_encoder_decoder": True, "bos_token_id": eot, "eos_token_id": eot, "pad_token_id": eot,
        "decoder_start_token_id": sot, "activation_function": "gelu", "scale_embedding": False, "median_filter_width": 7,
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
        # openai/whisper-tiny's alignment heads for that shape; the fixture's: every head of its last layer
        "alignment_heads": [[2, 2], [3, 0], [3, 2], [3, 3], [3, 4], [3, 5]] if tiny else [[DEC_LAYERS - 1, h] for h in range(HEADS)],
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
    if tiny:
        with torch.no_grad():
            # The final norm's channel 0 is a constant 100; every byte, special and timestamp token has -10 there
            # (others 0): their logits sit ~1000 below the words', so decoding never ends or leaves the words.
            # The other channels are scaled by 8 and the position embeddings by 4: confident picks (mean
            # log-probability near 0) that change from position to position (no repetition loop), so whisper.cpp
            # accepts its greedy pass (no temperature fallback) and both runtimes pick the same tokens.
            dec.layer_norm.weight[1:] = 8.0
            dec.embed_positions *= 4.0
            dec.layer_norm.weight[0], dec.layer_norm.bias[0] = 0.0, 100.0
            dec.embed_tokens.weight[:, 0] = 0.0
            dec.embed_tokens.weight[:256, 0] = -10.0
            dec.embed_tokens.weight[TINY_TEXT_TOKENS:, 0] = -10.0
    enc.eval()
    dec.eval()
    if a.ggml or a.ggml_q8:
        from tok_builders import bytes_to_unicode
        u2b = {c: b for b, c in bytes_to_unicode().items()}
        vocab = sorted(((i, t) for t, i in v.items() if i < (TINY_TEXT_TOKENS if tiny else v["<|endoftext|>"])))
        text_tokens = [bytes(u2b[c] for c in t) for _, t in vocab]
        for path, q8 in ((a.ggml, False), (a.ggml_q8, True)):
            if path:
                write_ggml(path, enc, dec, vocab_size, text_tokens, q8)
    hd = D // HEADS
    with torch.no_grad():
        feats = torch.randn(1, N_MELS, 3000)
        p = os.path.join(out, "onnx", "encoder_model.onnx")
        torch.onnx.export(enc, (feats,), p, input_names=["input_features"], output_names=["last_hidden_state"],
                          dynamic_axes={"input_features": {0: "batch_size"}, "last_hidden_state": {0: "batch_size"}},
                          opset_version=OPSET, do_constant_folding=True, **TORCHSCRIPT)
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
        for i in range(DEC_LAYERS):
            out_names.append(f"cross_attentions.{i}")
            dyn[out_names[-1]] = {0: "batch_size", 2: "decoder_sequence_length", 3: "encoder_sequence_length_out"}
        p = os.path.join(out, "onnx", "decoder_model_merged.onnx")
        torch.onnx.export(dec, (ids, hs, *past), p, input_names=in_names,
                          output_names=out_names, dynamic_axes=dyn, opset_version=OPSET, do_constant_folding=True, **TORCHSCRIPT)
        strip_doc(p)
    for f in os.listdir(os.path.join(out, "onnx")):  # torch's one-file-per-tensor leftovers
        if not f.endswith(".onnx"):
            os.remove(os.path.join(out, "onnx", f))
    if "q8" in a.dtypes.split(","):
        import onnx
        from quantize import quantize_q8, quantize_gather_q8
        for name in ("encoder_model", "decoder_model_merged"):
            q = quantize_gather_q8(quantize_q8(onnx.load(os.path.join(out, "onnx", f"{name}.onnx"))))
            onnx.save(q, os.path.join(out, "onnx", f"{name}_quantized.onnx"))


if __name__ == "__main__":
    main()

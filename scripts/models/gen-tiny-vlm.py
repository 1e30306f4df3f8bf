#!/usr/bin/python3
"""Generate a tiny random-weight Idefics3 / SmolVLM vision-language model in the hub's ONNX layout.

    /usr/bin/python3 scripts/models/gen-tiny-vlm.py            # -> test/fixtures/models/tiny-vlm
    /usr/bin/python3 scripts/models/gen-tiny-vlm.py --out DIR

Same three graphs and I/O names as HuggingFaceTB/SmolVLM-*-Instruct's onnx/ folder, which transformers.js
runs as Idefics3ForConditionalGeneration:
  vision_encoder.onnx        pixel_values [b, n, 3, h, w], pixel_attention_mask [b, n, h, w] -> image_features
  embed_tokens.onnx          input_ids -> inputs_embeds
  decoder_model_merged.onnx  inputs_embeds, attention_mask, position_ids, past_key_values.* -> logits, present.*
The vision side is SigLIP-shaped (patch conv, learned positions, pre-norm encoder, post-norm) followed by
Idefics3's connector (pixel shuffle by `scale_factor`, then a linear projection). Fixed seeds.
Needs Debian's python3-torch, python3-onnx.
"""
import argparse
import math
import os
import sys

import torch
from torch import nn
import torch.nn.functional as F

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tok_builders import train_bpe, byte_bpe_tokenizer_json  # noqa: E402
from torch_models import CausalLM, TORCHSCRIPT  # noqa: E402

gen = __import__("gen-tiny-models")  # noqa: E402
write_json, init_weights, strip_doc, OPSET, REPO = gen.write_json, gen.init_weights, gen.strip_doc, gen.OPSET, gen.REPO

SPECIALS = [("<|endoftext|>", True), ("<|im_start|>", True), ("<end_of_utterance>", True),
            ("<fake_token_around_image>", True), ("<image>", True), ("<global-img>", True)] + \
           [(f"<row_{r}_col_{c}>", True) for r in range(1, 3) for c in range(1, 3)]

# SmolVLM's own chat template: content is a list of text and image parts
CHAT_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}"
    "{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n"
    "{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


class VisionLayer(nn.Module):
    def __init__(self, d, nh, inter):
        super().__init__()
        self.nh, self.d = nh, d
        self.layer_norm1 = nn.LayerNorm(d, eps=1e-6)
        self.qkv = nn.Linear(d, 3 * d)
        self.out_proj = nn.Linear(d, d)
        self.layer_norm2 = nn.LayerNorm(d, eps=1e-6)
        self.fc1 = nn.Linear(d, inter)
        self.fc2 = nn.Linear(inter, d)

    def forward(self, x):
        b, s, _ = x.shape
        h = self.layer_norm1(x)
        qkv = self.qkv(h).view(b, s, 3, self.nh, self.d // self.nh).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = ((q @ k.transpose(2, 3)) / math.sqrt(self.d // self.nh)).softmax(-1)
        x = x + self.out_proj((att @ v).transpose(1, 2).reshape(b, s, self.d))
        return x + self.fc2(F.gelu(self.fc1(self.layer_norm2(x)), approximate="tanh"))


class VisionEncoder(nn.Module):
    def __init__(self, vc, text_hidden, scale_factor):
        super().__init__()
        d, p = vc["hidden_size"], vc["patch_size"]
        self.grid = vc["image_size"] // p
        self.patch_embedding = nn.Conv2d(vc["num_channels"], d, p, stride=p)
        self.position_embedding = nn.Embedding(self.grid * self.grid, d)
        self.layers = nn.ModuleList([VisionLayer(d, vc["num_attention_heads"], vc["intermediate_size"])
                                     for _ in range(vc["num_hidden_layers"])])
        self.post_layernorm = nn.LayerNorm(d, eps=1e-6)
        self.scale = scale_factor
        self.proj = nn.Linear(d * scale_factor * scale_factor, text_hidden, bias=False)

    def pixel_shuffle(self, x):
        # Idefics3Connector.pixel_shuffle: [n, s, d] -> [n, s / r^2, d * r^2]
        n, s, d = x.shape
        side = self.grid
        r = self.scale
        x = x.view(n, side, side // r, d * r)
        x = x.permute(0, 2, 1, 3).reshape(n, side // r, side // r, d * r * r)
        x = x.permute(0, 2, 1, 3).reshape(n, s // (r * r), d * r * r)
        return x

    def forward(self, pixel_values, pixel_attention_mask):
        b, n, c, h, w = pixel_values.shape
        frames = pixel_values.reshape(b * n, c, h, w)
        # frames wholly masked out are padding in a batch; zeroing them keeps the mask an input of the graph
        keep = pixel_attention_mask.reshape(b * n, h * w).to(frames.dtype).amax(-1)[:, None, None, None]
        x = self.patch_embedding(frames * keep).flatten(2).transpose(1, 2)
        x = x + self.position_embedding.weight[None]
        for layer in self.layers:
            x = layer(x)
        x = self.post_layernorm(x)
        return self.proj(self.pixel_shuffle(x))


class EmbedTokens(nn.Module):
    def __init__(self, emb):
        super().__init__()
        self.emb = emb

    def forward(self, input_ids):
        return self.emb(input_ids)


class EmbedsDecoder(nn.Module):
    """The LLaMA decoder fed with inputs_embeds (images already merged in by the caller)."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, inputs_embeds, attention_mask, position_ids, *past):
        lm = self.lm
        x = inputs_embeds
        freqs = position_ids[..., None].float() * lm.inv_freq
        emb = torch.cat([freqs, freqs], dim=-1)[:, None]
        cos, sin = emb.cos(), emb.sin()
        q = x.shape[1]
        t = attention_mask.shape[1]
        qi = torch.arange(q)[:, None] + (t - q)
        ki = torch.arange(t)[None, :]
        allowed = (ki <= qi)[None, None] & (attention_mask[:, None, None, :] > 0)
        mask = torch.where(allowed, torch.zeros((), dtype=x.dtype), torch.full((), -1e9, dtype=x.dtype))
        presents = []
        for i, layer in enumerate(lm.layers):
            x, k, v = layer(x, cos, sin, mask, past[2 * i], past[2 * i + 1])
            presents += [k, v]
        return (lm.lm_head(lm.norm(x)), *presents)


def export(model, args, path, inputs, outputs, dyn):
    model.eval()
    with torch.no_grad():
        torch.onnx.export(model, args, path, input_names=inputs, output_names=outputs, dynamic_axes=dyn,
                          opset_version=OPSET, do_constant_folding=True, **TORCHSCRIPT)
    strip_doc(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, "test", "fixtures", "models", "tiny-vlm"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    out = a.out
    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    vocab, merges = train_bpe(220)
    tok, v = byte_bpe_tokenizer_json(vocab, merges, SPECIALS)
    write_json(os.path.join(out, "tokenizer.json"), tok)
    write_json(os.path.join(out, "tokenizer_config.json"), {
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 512, "bos_token": "<|im_start|>",
        "eos_token": "<end_of_utterance>", "pad_token": "<|endoftext|>", "unk_token": None,
        "add_bos_token": False, "add_eos_token": False, "clean_up_tokenization_spaces": False,
        "split_special_tokens": False, "chat_template": CHAT_TEMPLATE,
    })
    eos = v["<end_of_utterance>"]
    text = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": len(v), "hidden_size": 32,
        "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 8, "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
        "tie_word_embeddings": False, "hidden_act": "silu", "torch_dtype": "float32",
        "bos_token_id": v["<|im_start|>"], "eos_token_id": eos, "pad_token_id": v["<|endoftext|>"],
    }
    vision = {"model_type": "idefics3_vision", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
              "num_attention_heads": 2, "num_channels": 3, "image_size": 32, "patch_size": 8}
    scale = 2
    image_seq_len = (vision["image_size"] // vision["patch_size"]) ** 2 // (scale * scale)
    write_json(os.path.join(out, "config.json"), {
        "architectures": ["Idefics3ForConditionalGeneration"], "model_type": "idefics3",
        "image_token_id": v["<image>"], "scale_factor": scale, "tie_word_embeddings": False,
        "torch_dtype": "float32", "vocab_size": len(v), "bos_token_id": text["bos_token_id"], "eos_token_id": eos,
        "pad_token_id": text["pad_token_id"], "text_config": text, "vision_config": vision,
        "transformers.js_config": {"use_external_data_format": False},
    })
    write_json(os.path.join(out, "generation_config.json"), {
        "bos_token_id": text["bos_token_id"], "eos_token_id": [eos, v["<|endoftext|>"]],
        "pad_token_id": text["pad_token_id"],
    })
    write_json(os.path.join(out, "preprocessor_config.json"), {
        "image_processor_type": "Idefics3ImageProcessor", "do_convert_rgb": True, "do_resize": True,
        "size": {"longest_edge": 2 * vision["image_size"]}, "resample": 1, "do_image_splitting": True,
        "max_image_size": {"longest_edge": vision["image_size"]}, "do_rescale": True,
        "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5], "do_pad": False, "processor_class": "Idefics3Processor",
    })
    write_json(os.path.join(out, "processor_config.json"), {"image_seq_len": image_seq_len,
                                                            "processor_class": "Idefics3Processor"})

    torch.manual_seed(99)
    lm = CausalLM({**text, "qkv_bias": False})
    init_weights(lm, 99, std=0.5)
    enc = VisionEncoder(vision, text["hidden_size"], scale)
    init_weights(enc, 100, std=0.3)
    onnx_dir = os.path.join(out, "onnx")

    s = vision["image_size"]
    export(enc, (torch.rand(1, 2, 3, s, s), torch.ones(1, 2, s, s, dtype=torch.bool)),
           os.path.join(onnx_dir, "vision_encoder.onnx"), ["pixel_values", "pixel_attention_mask"], ["image_features"],
           {"pixel_values": {0: "batch_size", 1: "num_images"},
            "pixel_attention_mask": {0: "batch_size", 1: "num_images"},
            "image_features": {0: "batch_size_x_num_images"}})
    export(EmbedTokens(lm.embed_tokens), (torch.tensor([[1, 2, 3]]),), os.path.join(onnx_dir, "embed_tokens.onnx"),
           ["input_ids"], ["inputs_embeds"],
           {"input_ids": {0: "batch_size", 1: "sequence_length"}, "inputs_embeds": {0: "batch_size", 1: "sequence_length"}})

    past_len = 2
    args = [torch.randn(1, 3, text["hidden_size"]), torch.ones(1, 3 + past_len, dtype=torch.int64),
            torch.arange(past_len, past_len + 3, dtype=torch.int64)[None]]
    ins, outs = ["inputs_embeds", "attention_mask", "position_ids"], ["logits"]
    dyn = {"inputs_embeds": {0: "batch_size", 1: "sequence_length"},
           "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
           "position_ids": {0: "batch_size", 1: "sequence_length"}, "logits": {0: "batch_size", 1: "sequence_length"}}
    gen.add_past_key_values(text, past_len, args, ins, outs, dyn)
    export(EmbedsDecoder(lm), tuple(args), os.path.join(onnx_dir, "decoder_model_merged.onnx"), ins, outs, dyn)


if __name__ == "__main__":
    main()

"""Minimal torch re-implementations of the architectures we export (no `transformers` package here).

Written for a clean ONNX export that transformers.js runs: explicit KV-cache inputs/outputs, GQA by
expand+reshape (torch's `repeat_interleave` exports badly), masks built from `attention_mask`.
"""
import inspect
import math
import torch
from torch import nn
import torch.nn.functional as F

# The TorchScript exporter these scripts were written for: torch 2.9 made the torch.export-based one the
# default (it needs onnxscript and refuses dynamic_axes); torch before 2.x (Debian's 1.13) has only this one
# and no `dynamo` argument.
TORCHSCRIPT = {'dynamo': False} if 'dynamo' in inspect.signature(torch.onnx.export).parameters else {}

def init_weights(model, seed, std=0.02):
    """Seeded random weights (norm scales 1): the same seed gives the same checkpoint in every generator, so the
    ONNX files and the GGUF of one model hold the same weights."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * std)
            elif "weight" in name and ("norm" in name or "ln" in name):
                p.fill_(1.0)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * std)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class DecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, hd = c["hidden_size"], c["head_dim"]
        self.nh, self.nkv, self.hd = c["num_attention_heads"], c["num_key_value_heads"], hd
        bias = c.get("qkv_bias", False)
        self.q_proj = nn.Linear(d, self.nh * hd, bias=bias)
        self.k_proj = nn.Linear(d, self.nkv * hd, bias=bias)
        self.v_proj = nn.Linear(d, self.nkv * hd, bias=bias)
        self.o_proj = nn.Linear(self.nh * hd, d, bias=False)
        self.gate_proj = nn.Linear(d, c["intermediate_size"], bias=False)
        self.up_proj = nn.Linear(d, c["intermediate_size"], bias=False)
        self.down_proj = nn.Linear(c["intermediate_size"], d, bias=False)
        self.input_layernorm = RMSNorm(d, c["rms_norm_eps"])
        self.post_attention_layernorm = RMSNorm(d, c["rms_norm_eps"])

    def forward(self, x, cos, sin, mask, past_k, past_v):
        b, q, _ = x.shape
        h = self.input_layernorm(x)
        qs = self.q_proj(h).view(b, q, self.nh, self.hd).transpose(1, 2)
        ks = self.k_proj(h).view(b, q, self.nkv, self.hd).transpose(1, 2)
        vs = self.v_proj(h).view(b, q, self.nkv, self.hd).transpose(1, 2)
        qs = qs * cos + rotate_half(qs) * sin
        ks = ks * cos + rotate_half(ks) * sin
        k = torch.cat([past_k, ks], dim=2)
        v = torch.cat([past_v, vs], dim=2)
        rep = self.nh // self.nkv
        t = k.shape[2]
        kx = k[:, :, None].expand(b, self.nkv, rep, t, self.hd).reshape(b, self.nh, t, self.hd)
        vx = v[:, :, None].expand(b, self.nkv, rep, t, self.hd).reshape(b, self.nh, t, self.hd)
        att = (qs @ kx.transpose(2, 3)) / math.sqrt(self.hd) + mask
        o = (att.softmax(-1) @ vx).transpose(1, 2).reshape(b, q, self.nh * self.hd)
        x = x + self.o_proj(o)
        h = self.post_attention_layernorm(x)
        x = x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))
        return x, k, v


class CausalLM(nn.Module):
    """LLaMA / Qwen2 decoder: (input_ids, attention_mask, position_ids, past...) -> (logits, present...)."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList([DecoderLayer(c) for _ in range(c["num_hidden_layers"])])
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c.get("tie_word_embeddings"):
            self.lm_head.weight = self.embed_tokens.weight
        hd = c["head_dim"]
        inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, input_ids, attention_mask, position_ids, *past):
        x, presents = self.hidden(input_ids, attention_mask, position_ids, *past)
        return (self.lm_head(self.norm(x)), *presents)

    def hidden(self, input_ids, attention_mask, position_ids, *past):
        """The last layer's output before the final norm, and the present key/values."""
        x = self.embed_tokens(input_ids)
        freqs = position_ids[..., None].float() * self.inv_freq
        emb = torch.cat([freqs, freqs], dim=-1)[:, None]
        cos, sin = emb.cos(), emb.sin()
        q = input_ids.shape[1]
        t = attention_mask.shape[1]
        past_len = t - q
        qi = torch.arange(q, device=x.device)[:, None] + past_len
        ki = torch.arange(t, device=x.device)[None, :]
        allowed = (ki <= qi)[None, None] & (attention_mask[:, None, None, :] > 0)
        mask = torch.where(allowed, torch.zeros((), dtype=x.dtype), torch.full((), -1e9, dtype=x.dtype))
        presents = []
        for i, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, mask, past[2 * i], past[2 * i + 1])
            presents += [k, v]
        return x, presents


class LogitsToKeep(nn.Module):
    """Export wrapper with the `num_logits_to_keep` input (int64 scalar) transformers.js feeds: 0 = logits of
    every position, k > 0 = of the last k only. Generation needs the last position alone, so prefill skips
    the LM head (vocab x hidden per position) and the [positions, vocab] output for the others."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids, attention_mask, position_ids, num_logits_to_keep, *past):
        x, presents = self.lm.hidden(input_ids, attention_mask, position_ids, *past)
        q = torch._shape_as_tensor(x)[1]
        n = torch.where(num_logits_to_keep > 0, num_logits_to_keep, q)
        x = x.index_select(1, torch.arange(q - n, q))
        return (self.lm.lm_head(self.lm.norm(x)), *presents)


class BertLayer(nn.Module):
    def __init__(self, d, nh, inter):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, nh, batch_first=True)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.ff1 = nn.Linear(d, inter)
        self.ff2 = nn.Linear(inter, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)
        self.nh, self.d = nh, d

    def forward(self, x, mask):
        # explicit attention (MultiheadAttention's fused path exports poorly with masks)
        b, s, _ = x.shape
        w, bias = self.attn.in_proj_weight, self.attn.in_proj_bias
        qkv = F.linear(x, w, bias).view(b, s, 3, self.nh, self.d // self.nh).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        att = (q @ k.transpose(2, 3)) / math.sqrt(self.d // self.nh) + mask
        o = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, s, self.d)
        x = self.ln1(x + self.attn.out_proj(o))
        return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))


class Bert(nn.Module):
    """BERT encoder; `classifier=True` adds pooler + 1-logit head (cross-encoder)."""

    def __init__(self, c, classifier=False):
        super().__init__()
        d = c["hidden_size"]
        self.word = nn.Embedding(c["vocab_size"], d)
        self.pos = nn.Embedding(c["max_position_embeddings"], d)
        self.typ = nn.Embedding(c["type_vocab_size"], d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(d, c["num_attention_heads"], c["intermediate_size"])
                                     for _ in range(c["num_hidden_layers"])])
        self.classifier = classifier
        if classifier:
            self.pooler = nn.Linear(d, d)
            self.head = nn.Linear(d, 1)

    def forward(self, input_ids, attention_mask, token_type_ids):
        s = input_ids.shape[1]
        pos = torch.arange(s, device=input_ids.device)[None]
        x = self.ln(self.word(input_ids) + self.pos(pos) + self.typ(token_type_ids))
        mask = (1.0 - attention_mask[:, None, None, :].float()) * -1e9
        for layer in self.layers:
            x = layer(x, mask)
        if self.classifier:
            return self.head(torch.tanh(self.pooler(x[:, 0])))
        return x

#!/usr/bin/python3
"""Reference outputs of the tiny fixture models, computed by torch, for the inference tests to compare with.

    /usr/bin/python3 scripts/models/reference-outputs.py    # -> test/fixtures/models/reference-outputs.json

The torch models are rebuilt from the generator's seeds (gen-tiny-models.py) and checked against the
committed ONNX files (every initializer that keeps its torch name must match bit for bit), so the numbers
are those of the very weights the tests load. Token ids come from a WordPiece tokenizer written here from
the algorithm (lowercase, split on whitespace and punctuation, greedy longest match with '##'), not from
transformers.js. Needs Debian's python3-torch, python3-onnx, python3-numpy.
"""
import importlib.util
import json
import os
import sys
import unicodedata

import numpy as np
import onnx
import onnx.numpy_helper
import torch

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "test", "fixtures", "models")
sys.path.insert(0, HERE)
spec = importlib.util.spec_from_file_location("gen", os.path.join(HERE, "gen-tiny-models.py"))
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
from torch_models import Bert, CausalLM  # noqa: E402


def load_json(*p):
    with open(os.path.join(MODELS, *p)) as f:
        return json.load(f)


def check_against_onnx(model, name):
    """The rebuilt weights are the committed ones: every 2-D float initializer of the ONNX file must equal a
    torch parameter (by name, or transposed where the export turned a Linear into a MatMul)."""
    m = onnx.load(os.path.join(MODELS, name, "onnx", "model.onnx"))
    params = dict(model.named_parameters())
    arrays = [p.detach().numpy() for p in params.values()]
    candidates = {(a.shape, a.tobytes()) for a in arrays} | {(a.T.shape, np.ascontiguousarray(a.T).tobytes()) for a in arrays if a.ndim == 2}
    checked = 0
    for init in m.graph.initializer:
        want = onnx.numpy_helper.to_array(init)
        if init.name in params:
            ok = np.array_equal(want, params[init.name].detach().numpy())
        elif want.dtype == np.float32 and want.ndim == 2:
            ok = (want.shape, np.ascontiguousarray(want).tobytes()) in candidates
        else:
            continue
        if not ok:
            sys.exit(f"{name}: initializer {init.name} differs from the rebuilt torch model; regenerate the fixtures first")
        checked += 1
    if checked < 5:
        sys.exit(f"{name}: only {checked} initializers could be compared")


def wordpiece(text, vocab):
    """BERT tokenization: lowercase, split on whitespace and punctuation, greedy longest match."""
    words, cur = [], ""
    for ch in unicodedata.normalize("NFC", text.lower()):
        if ch.isspace():
            if cur: words.append(cur)
            cur = ""
        elif unicodedata.category(ch).startswith("P") or (33 <= ord(ch) <= 47 or 58 <= ord(ch) <= 64 or 91 <= ord(ch) <= 96 or 123 <= ord(ch) <= 126):
            if cur: words.append(cur)
            words.append(ch)
            cur = ""
        else:
            cur += ch
    if cur: words.append(cur)
    ids = []
    for w in words:
        start, pieces = 0, []
        while start < len(w):
            end = len(w)
            while end > start:
                piece = ("##" if start else "") + w[start:end]
                if piece in vocab:
                    break
                end -= 1
            if end == start:
                pieces = [vocab["[UNK]"]]
                break
            pieces.append(vocab[("##" if start else "") + w[start:end]])
            start = end
        ids += pieces
    return ids


def bert(name, classifier, seed):
    c = load_json(name, "config.json")
    torch.manual_seed(seed)
    model = Bert(c, classifier=classifier)
    gen.init_weights(model, seed, std=0.2)
    model.eval()
    check_against_onnx(model, name)
    return model, load_json(name, "tokenizer.json")["model"]["vocab"], c


def run_bert(model, ids, types=None):
    t = torch.tensor([ids])
    with torch.no_grad():
        return model(t, torch.ones_like(t), torch.tensor([types]) if types else torch.zeros_like(t))


def main():
    torch.set_num_threads(1)
    out = {"generator": "scripts/models/reference-outputs.py", "torch": torch.__version__}

    # Embeddings: mean over tokens (special tokens included, as sentence-transformers does), then L2.
    model, vocab, c = bert("tiny-bert-embed", False, 42)
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    def embed(ids):
        h = run_bert(model, [cls, *ids, sep])[0].numpy().astype(np.float64)
        v = h.mean(axis=0)
        return v / np.linalg.norm(v)
    texts = ["hello world", "the capital of france", "Zebra, quickly!"]
    emb = [{"text": t, "ids": [cls, *wordpiece(t, vocab), sep], "embedding": embed(wordpiece(t, vocab)).tolist()} for t in texts]
    # An input longer than one window (max_position_embeddings - [CLS] - [SEP]): the mean of its windows' vectors.
    letters = "abcdefghijklmnopqrstuvwxyz"
    long_text = " ".join(letters[(i * 7) % 26] for i in range(150))
    ids = wordpiece(long_text, vocab)
    window = c["max_position_embeddings"] - 2
    parts = [embed(ids[i:i + window]) for i in range(0, len(ids), window)]
    mean = np.mean(parts, axis=0)
    out["embed"] = {"model": "tiny-bert-embed", "inputs": emb,
                    "long": {"text": long_text, "tokens": len(ids) + 2 * len(parts), "windows": len(parts),
                             "embedding": (mean / np.linalg.norm(mean)).tolist(), "first_window": parts[0].tolist()}}

    # Cross-encoder: one logit per (query, passage), read jointly with token types 0 / 1.
    model, vocab, _ = bert("tiny-bert-reranker", True, 7)
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    q = "what is the capital of france"
    pairs = []
    for a, b in [(q, "paris is the capital of france"), (q, "the quick brown fox jumps"), ("paris is the capital of france", q)]:
        ia, ib = wordpiece(a, vocab), wordpiece(b, vocab)
        ids = [cls, *ia, sep, *ib, sep]
        types = [0] * (len(ia) + 2) + [1] * (len(ib) + 1)
        pairs.append({"query": a, "passage": b, "ids": ids, "logit": float(run_bert(model, ids, types)[0, 0])})
    out["rerank"] = {"model": "tiny-bert-reranker", "pairs": pairs}

    # Decoder: logits of the last position for fixed token ids, and 16 greedy tokens (KV cache as exported).
    c = load_json("tiny-llama", "config.json")
    c["init_std"] = 0.5
    torch.manual_seed(1234)
    model = CausalLM({k: v for k, v in c.items() if k != "init_std"})
    gen.init_weights(model, 1234, std=0.5)
    model.eval()
    check_against_onnx(model, "tiny-llama")
    L, nkv, hd = c["num_hidden_layers"], c["num_key_value_heads"], c["head_dim"]
    prompt = [5, 17, 42, 99, 7, 130]
    ids, past, new, first = list(prompt), [torch.zeros(1, nkv, 0, hd) for _ in range(2 * L)], [], None
    with torch.no_grad():
        step = torch.tensor([prompt])
        for _ in range(16):
            total = len(ids)
            pos = torch.arange(total - step.shape[1], total)[None]
            logits, *past = model(step, torch.ones(1, total, dtype=torch.int64), pos, *past)
            last = logits[0, -1]
            if first is None:
                first = last.tolist()
            nxt = int(torch.argmax(last))
            new.append(nxt)
            ids.append(nxt)
            step = torch.tensor([[nxt]])
    out["generate"] = {"model": "tiny-llama", "prompt_ids": prompt, "last_logits": first, "greedy_ids": new}

    path = os.path.join(MODELS, "reference-outputs.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(path)


if __name__ == "__main__":
    main()

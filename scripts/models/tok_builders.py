"""Tiny tokenizer.json builders in the Hugging Face `tokenizers` format (no `tokenizers` package needed).

- byte-level BPE (GPT-2/Qwen style): every byte has a token, so any text encodes (JSON constraint needs that);
- WordPiece (BERT style) for the encoder models.
Merges/vocab are trained on a fixed corpus so regeneration is byte-identical.
"""
import re
from collections import Counter

CORPUS = """
The quick brown fox jumps over the lazy dog. Hello, world! How are you today?
I am a small language model. The answer is 42. Please call the tool with the right arguments.
{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]}
user assistant system tool function name arguments content think true false null
The weather in Paris is sunny. Summarize the following document in one sentence.
Translate this text into French. What is the capital of France? The capital of France is Paris.
def main(): return 0  # code and numbers 0123456789 + - * / = < > [ ] { } ( ) : ; , . ! ?
"""


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode map (used by ByteLevel pre-tokenizer/decoder)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


# Close enough to GPT-2's split for training; merges are valid whatever split the runtime uses.
PRETOK = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]| ?[^\sA-Za-z0-9]+|\s+""")


def train_bpe(num_merges, corpus=CORPUS):
    b2u = bytes_to_unicode()
    words = Counter()
    for w in PRETOK.findall(corpus):
        words[tuple(b2u[b] for b in w.encode("utf-8"))] += 1
    vocab = [b2u[b] for b in range(256)]
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        # deterministic: highest count, then lexicographic
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))  # ties broken by the pair itself
        merges.append((a, b))
        vocab.append(a + b)
        nw = Counter()
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            nw[tuple(out)] += c
        words = nw
    return vocab, merges


def synthetic_merges(vocab, merges, target):
    """Pad a BPE vocab to `target` entries with valid (never-firing in practice) merges: for benchmarks
    that need a real LLM's vocabulary size so every sampled id decodes."""
    seen = set(vocab)
    base = vocab[:]
    i = 0
    while len(vocab) < target:
        a = base[i % len(base)]
        b = base[(i * 7919 + 13) % len(base)]
        i += 1
        t = a + b
        if t in seen:
            continue
        seen.add(t)
        vocab.append(t)
        merges.append((a, b))
        if i % 50 == 0:
            base.append(t)  # grow so the pool never runs dry
    return vocab, merges


def byte_bpe_tokenizer_json(vocab, merges, added):
    """added: list of (content, special) appended after the BPE vocab."""
    v = {tok: i for i, tok in enumerate(vocab)}
    added_tokens = []
    for content, special in added:
        idx = len(v)
        v[content] = idx
        added_tokens.append({"id": idx, "content": content, "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": False, "special": special})
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added_tokens,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": v, "merges": [f"{a} {b}" for a, b in merges]},
    }
    return tok, v


BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def wordpiece_vocab(num_words=120, corpus=CORPUS):
    chars = sorted(set("abcdefghijklmnopqrstuvwxyz0123456789.,!?;:'\"()[]{}-+*/=<>_#@%&$"))
    words = Counter(w for w in re.findall(r"[a-z]+", corpus.lower()) if len(w) > 1)
    common = [w for w, _ in sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[:num_words]]
    vocab = BERT_SPECIALS + chars + ["##" + c for c in chars if c.isalnum()] + common
    return vocab


def wordpiece_tokenizer_json(vocab, max_len):
    v = {t: i for i, t in enumerate(vocab)}
    sp = lambda t: {"id": t, "ids": [v[t]], "tokens": [t]}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": v[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for t in BERT_SPECIALS],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": sp("[CLS]"), "[SEP]": sp("[SEP]")},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": v},
    }

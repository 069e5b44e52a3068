"""How many tokens the packaged prompts take in the text encoders of the model presets.

No tokenizer ships with the project, so the vocabularies are given on the command line:

    python benchmarks/prompt_tokens.py \
        --clip-bpe open_clip/bpe_simple_vocab_16e6.txt.gz \
        --tokenizer qwen=path/to/qwen3/tokenizer.json \
        --tokenizer llama2=path/to/llama2/tokenizer.json

``--clip-bpe`` is CLIP's byte-pair vocabulary as the open_clip_torch wheel ships it (the one
SDXL, SD3.5 and FLUX.1 use, 77 tokens); ``--tokenizer`` takes any Hugging Face
``tokenizer.json`` (Qwen's is the vocabulary of Qwen-Image, HunyuanImage and Z-Image). Prints,
per tokenizer, the median and largest count over the cases and how many pass 77, 256 and 512.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from pytest_imagetime.cases.loading import (  # noqa: E402
    builtin_cases_dir,
    case_files,
    load_case_file,
)
from pytest_imagetime.cases.rules import estimated_tokens  # noqa: E402

LIMITS = (77, 256, 512)


def _byte_symbols() -> list[str]:
    """GPT-2's reversible map from bytes to printable characters, which CLIP's BPE reads."""
    keep = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
            + list(range(ord("®"), ord("ÿ") + 1)))
    symbols, extra = [], 0
    for byte in range(256):
        if byte in keep:
            symbols.append(chr(byte))
        else:
            symbols.append(chr(256 + extra))
            extra += 1
    return symbols


def clip_counter(bpe: Path) -> Callable[[str], int]:
    """CLIP's tokenizer built from its merges file: the 48,894 merges after the header line,
    a vocabulary of the byte symbols, their end-of-word forms, the merged pairs and the two
    special tokens."""
    from transformers import CLIPTokenizer

    with gzip.open(bpe, "rt", encoding="utf-8") as packed:
        merges = packed.read().split("\n")[1:49152 - 256 - 2 + 1]
    symbols = _byte_symbols()
    vocab = symbols + [s + "</w>" for s in symbols] + ["".join(m.split()) for m in merges]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    with tempfile.TemporaryDirectory() as folder:
        vocab_file, merges_file = Path(folder) / "vocab.json", Path(folder) / "merges.txt"
        vocab_file.write_text(json.dumps({token: i for i, token in enumerate(vocab)}))
        merges_file.write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
        tokenizer: Any = CLIPTokenizer(str(vocab_file), str(merges_file))
    return lambda text: len(tokenizer(text, truncation=False, verbose=False)["input_ids"])


def json_counter(path: Path) -> Callable[[str], int]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    return lambda text: len(tokenizer.encode(text).ids)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clip-bpe", type=Path, help="bpe_simple_vocab_16e6.txt.gz")
    parser.add_argument("--tokenizer", action="append", default=[], metavar="LABEL=PATH",
                        help="a tokenizer.json, repeatable")
    parser.add_argument("--cases", type=Path, default=None, help="case files or a folder")
    args = parser.parse_args(argv)
    folder = args.cases or builtin_cases_dir()
    prompts = [c.prompt for f in case_files([folder]) for c in load_case_file(f)]
    counters: dict[str, Callable[[str], int]] = {}
    if args.clip_bpe:
        counters["CLIP"] = clip_counter(args.clip_bpe)
    for entry in args.tokenizer:
        label, _, path = entry.partition("=")
        counters[label] = json_counter(Path(path))
    counters["lint estimate (1 per 3 characters)"] = estimated_tokens
    words = [len(p.split()) for p in prompts]
    print(f"{len(prompts)} prompts; words: median {statistics.median(words):g}, "
          f"max {max(words)}")
    for label, count in counters.items():
        tokens = [count(p) for p in prompts]
        over = ", ".join(f"over {limit}: {sum(t > limit for t in tokens)}" for limit in LIMITS)
        print(f"{label}: median {statistics.median(tokens):g}, max {max(tokens)}; {over}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

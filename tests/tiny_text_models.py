"""Tiny random CLIP, BLIP and BERT models with local tokenizers, saved as model folders.

Each folder has the files of the real model (config, weights, processor and tokenizer files),
so the baselines load it through the same ``from_pretrained(path)`` as an official one, offline
and in a fraction of a second. The weights are random: the tests check the plumbing
(loading, batching, ranges, determinism), never what a score says about an image.
"""

from __future__ import annotations

import importlib
import string
from pathlib import Path
from typing import Any

import torch

HIDDEN = 32
IMAGE = 32  # pixels a side; patches of 8 give 16 image tokens
CLIP_TOKENS = 77
SEED = 0  # the same weights on every run

# Whole words the BERT vocabularies know besides single letters, so captions read as words.
WORDS = ("a", "an", "the", "of", "image", "photo", "cat", "dog", "glass", "water", "cook",
         "aardvark", "forest", "map", "europe", "old", "month", "years")


def _transformers() -> Any:
    """transformers untyped: its stubs are partial, and these are plain constructors."""
    return importlib.import_module("transformers")


def clip_tokenizer() -> Any:
    """Byte-level BPE over the byte alphabet, with a few merges so that BPE runs."""
    from tokenizers.pre_tokenizers import ByteLevel

    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for symbol in sorted(ByteLevel.alphabet()):
        vocab.setdefault(symbol, len(vocab))
        vocab.setdefault(symbol + "</w>", len(vocab))
    merges = [("t", "h"), ("th", "e</w>"), ("o", "f</w>"), ("a", "n</w>")]
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    # pad with the end token, as openai/clip does: the pooled token is the first end token
    return _transformers().CLIPTokenizer(vocab=vocab, merges=merges,
                                         model_max_length=CLIP_TOKENS, pad_token="<|endoftext|>")


def bert_vocab(*special: str) -> dict[str, int]:
    """WordPiece pieces for any lowercase ASCII text: letters, digits, their ## forms, words."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *special]
    chars = string.ascii_lowercase + string.digits + string.punctuation
    tokens += list(chars) + [f"##{c}" for c in chars] + [w for w in WORDS if len(w) > 1]
    return {token: index for index, token in enumerate(dict.fromkeys(tokens))}


def bert_tokenizer(*special: str, bos: str | None = None) -> Any:
    extra = {"bos_token": bos} if bos else {}
    return _transformers().BertTokenizer(vocab=bert_vocab(*special), model_max_length=128,
                                         **extra)


def save_clip(folder: Path) -> Path:
    """A CLIPModel with its CLIPProcessor."""
    tf = _transformers()
    tokenizer = clip_tokenizer()
    torch.manual_seed(SEED)
    config = tf.CLIPConfig(
        text_config={"vocab_size": len(tokenizer), "hidden_size": HIDDEN,
                     "intermediate_size": 37, "num_hidden_layers": 2,
                     "num_attention_heads": 4, "max_position_embeddings": CLIP_TOKENS,
                     "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 1},
        vision_config={"hidden_size": HIDDEN, "intermediate_size": 37, "num_hidden_layers": 2,
                       "num_attention_heads": 4, "image_size": IMAGE, "patch_size": 8},
        projection_dim=HIDDEN)
    tf.CLIPModel(config).eval().save_pretrained(folder)
    images = tf.CLIPImageProcessor(size={"shortest_edge": IMAGE},
                                   crop_size={"height": IMAGE, "width": IMAGE})
    tf.CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def save_blip(folder: Path) -> Path:
    """A BlipForConditionalGeneration captioner with its BlipProcessor."""
    tf = _transformers()
    tokenizer = bert_tokenizer("[DEC]", bos="[DEC]")
    vocab = tokenizer.get_vocab()
    torch.manual_seed(SEED)
    config = tf.BlipConfig(
        text_config={"vocab_size": len(vocab), "hidden_size": HIDDEN,
                     "encoder_hidden_size": HIDDEN, "intermediate_size": 37,
                     "num_hidden_layers": 2, "num_attention_heads": 4,
                     "max_position_embeddings": 64, "bos_token_id": vocab["[DEC]"],
                     "eos_token_id": vocab["[SEP]"], "sep_token_id": vocab["[SEP]"],
                     "pad_token_id": vocab["[PAD]"]},
        vision_config={"hidden_size": HIDDEN, "intermediate_size": 37, "num_hidden_layers": 2,
                       "num_attention_heads": 4, "image_size": IMAGE, "patch_size": 8},
        projection_dim=HIDDEN)
    tf.BlipForConditionalGeneration(config).eval().save_pretrained(folder)
    images = tf.BlipImageProcessor(size={"height": IMAGE, "width": IMAGE})
    tf.BlipProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def save_bert(folder: Path) -> Path:
    """A BertModel sentence embedder (the layout of all-MiniLM-L6-v2) with its tokenizer."""
    tf = _transformers()
    tokenizer = bert_tokenizer()
    torch.manual_seed(SEED)
    config = tf.BertConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=37,
                           max_position_embeddings=128)
    tf.BertModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder

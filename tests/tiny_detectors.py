"""Tiny random OWLv2 and Grounding DINO detectors with local processors, saved as model folders.

Each folder holds what the real checkpoint holds (config, weights, processor and tokenizer
files), so the judge loads it through the same ``from_pretrained(path)`` as the documented
ids. The weights are random: tests check the plumbing (loading, queries, boxes per panel),
never what a detection says about an image.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from tests.tiny_text_models import SEED, _transformers, bert_tokenizer

HIDDEN = 32
IMAGE = 32
QUERY_TOKENS = 16


def owl_tokenizer() -> Any:
    """Byte-level BPE like CLIP's, its start token at id 1: OWL reads a query whose first
    token id is 0 as padding."""
    from tokenizers.pre_tokenizers import ByteLevel

    vocab = {"<|unused|>": 0, "<|startoftext|>": 1, "<|endoftext|>": 2}
    for symbol in sorted(ByteLevel.alphabet()):
        vocab.setdefault(symbol, len(vocab))
        vocab.setdefault(symbol + "</w>", len(vocab))
    merges = [("t", "h"), ("th", "e</w>")]
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    return _transformers().CLIPTokenizer(vocab=vocab, merges=merges,
                                         model_max_length=QUERY_TOKENS,
                                         pad_token="<|endoftext|>")


def save_owlv2(folder: Path) -> Path:
    """An Owlv2ForObjectDetection with its Owlv2Processor."""
    tf = _transformers()
    tokenizer = owl_tokenizer()
    torch.manual_seed(SEED)
    config = tf.Owlv2Config(
        text_config={"vocab_size": len(tokenizer), "hidden_size": HIDDEN,
                     "intermediate_size": 37, "num_hidden_layers": 2, "num_attention_heads": 4,
                     "max_position_embeddings": QUERY_TOKENS, "bos_token_id": 1,
                     "eos_token_id": 2, "pad_token_id": 2},
        vision_config={"hidden_size": HIDDEN, "intermediate_size": 37, "num_hidden_layers": 2,
                       "num_attention_heads": 4, "image_size": IMAGE, "patch_size": 8},
        projection_dim=HIDDEN)
    tf.Owlv2ForObjectDetection(config).eval().save_pretrained(folder)
    images = tf.Owlv2ImageProcessor(size={"height": IMAGE, "width": IMAGE})
    tf.Owlv2Processor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def save_grounding_dino(folder: Path) -> Path:
    """A GroundingDinoForObjectDetection (a two-stage Swin backbone, a BERT text encoder)
    with its GroundingDinoProcessor."""
    tf = _transformers()
    tokenizer = bert_tokenizer()
    torch.manual_seed(SEED)
    backbone = tf.SwinConfig(image_size=IMAGE, patch_size=4, embed_dim=8, depths=[1, 1],
                             num_heads=[1, 1], window_size=2,
                             out_features=["stage1", "stage2"])
    text = tf.BertConfig(vocab_size=len(tokenizer), hidden_size=HIDDEN, num_hidden_layers=1,
                         num_attention_heads=2, intermediate_size=HIDDEN,
                         max_position_embeddings=64)
    # two decoder layers: the box heads of the layers after the first are tied to it
    config = tf.GroundingDinoConfig(
        backbone_config=backbone, use_timm_backbone=False, use_pretrained_backbone=False,
        text_config=text, d_model=HIDDEN, encoder_layers=1, decoder_layers=2,
        encoder_ffn_dim=HIDDEN, decoder_ffn_dim=HIDDEN, encoder_attention_heads=2,
        decoder_attention_heads=2, num_queries=8, num_feature_levels=2, encoder_n_points=2,
        decoder_n_points=2, max_text_len=32)
    tf.GroundingDinoForObjectDetection(config).eval().save_pretrained(folder)
    images = tf.GroundingDinoImageProcessor(size={"shortest_edge": IMAGE,
                                                  "longest_edge": IMAGE})
    tf.GroundingDinoProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    return folder

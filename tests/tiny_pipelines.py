"""Tiny random diffusers pipelines, saved as model folders, for the diffusers backend's tests.

Each pipeline has the components and file layout of the real one (model_index.json, one
folder per component) at a few hundred kilobytes, so ``from_pretrained(path)`` loads it
offline and renders a 64x64 image in a fraction of a second. The pictures are noise; the
tests check the plumbing (loading, seeding, batching, failures), never the content.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import diffusers
import torch
from tokenizers.pre_tokenizers import ByteLevel
from transformers import (
    CLIPTextConfig,
    CLIPTextModel,
    CLIPTextModelWithProjection,
    CLIPTokenizer,
    T5Config,
    T5EncoderModel,
    T5Tokenizer,
)

# diffusers' constructors are untyped; calling them through Any keeps strict mypy quiet.
api: Any = diffusers

CLIP_HIDDEN = 32
MAX_TOKENS = 77
SEED = 0  # the random weights: the same folder contents on every run


def clip_tokenizer() -> Any:
    """A byte-level BPE tokenizer with one token per byte symbol (no merges)."""
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for symbol in sorted(ByteLevel.alphabet()):
        vocab.setdefault(symbol, len(vocab))
        vocab.setdefault(symbol + "</w>", len(vocab))
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=MAX_TOKENS)


def t5_tokenizer() -> Any:
    """A Unigram tokenizer over printable characters, T5's special tokens first."""
    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -2.0)]
    pieces += [(c, -3.0) for c in string.printable if not c.isspace()]
    pieces += [("▁" + c, -2.5) for c in string.ascii_lowercase]
    return T5Tokenizer(vocab=pieces, extra_ids=0, model_max_length=MAX_TOKENS)


def clip_text_encoder(vocab_size: int, *, projection: bool = False) -> Any:
    config = CLIPTextConfig(vocab_size=vocab_size, hidden_size=CLIP_HIDDEN, intermediate_size=37,
                            num_hidden_layers=2, num_attention_heads=4,
                            max_position_embeddings=MAX_TOKENS, projection_dim=CLIP_HIDDEN,
                            bos_token_id=0, eos_token_id=1, pad_token_id=1, hidden_act="gelu")
    model_class = CLIPTextModelWithProjection if projection else CLIPTextModel
    return model_class(config)


def t5_text_encoder(vocab_size: int) -> Any:
    config = T5Config(vocab_size=vocab_size, d_model=32, d_kv=8, d_ff=37, num_layers=2,
                      num_heads=4, relative_attention_num_buckets=8, pad_token_id=0,
                      eos_token_id=1)
    return T5EncoderModel(config)


def sd_vae() -> Any:
    return api.AutoencoderKL(block_out_channels=(4, 8), in_channels=3, out_channels=3,
                             down_block_types=("DownEncoderBlock2D",) * 2,
                             up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4,
                             norm_num_groups=2, sample_size=32)


def sd_unet(**extra: Any) -> Any:
    config: dict[str, Any] = {
        "block_out_channels": (4, 8), "layers_per_block": 1, "sample_size": 32,
        "in_channels": 4, "out_channels": 4, "norm_num_groups": 2,
        "down_block_types": ("CrossAttnDownBlock2D", "DownBlock2D"),
        "up_block_types": ("UpBlock2D", "CrossAttnUpBlock2D"),
        "cross_attention_dim": CLIP_HIDDEN, "attention_head_dim": 2,
    }
    return api.UNet2DConditionModel(**{**config, **extra})


def stable_diffusion() -> Any:
    tokenizer = clip_tokenizer()
    return api.StableDiffusionPipeline(
        vae=sd_vae(), text_encoder=clip_text_encoder(len(tokenizer)), tokenizer=tokenizer,
        unet=sd_unet(), scheduler=api.DDIMScheduler(clip_sample=False, steps_offset=1),
        safety_checker=None, feature_extractor=None, requires_safety_checker=False)


def stable_diffusion_xl() -> Any:
    tokenizer = clip_tokenizer()
    # The UNet reads both encoders' hidden states side by side, plus the pooled projection
    # and six size numbers embedded with addition_time_embed_dim each.
    unet = sd_unet(cross_attention_dim=2 * CLIP_HIDDEN, addition_embed_type="text_time",
                   addition_time_embed_dim=8, transformer_layers_per_block=(1, 2),
                   projection_class_embeddings_input_dim=CLIP_HIDDEN + 6 * 8)
    return api.StableDiffusionXLPipeline(
        vae=sd_vae(), text_encoder=clip_text_encoder(len(tokenizer)),
        text_encoder_2=clip_text_encoder(len(tokenizer), projection=True), tokenizer=tokenizer,
        tokenizer_2=clip_tokenizer(), unet=unet,
        scheduler=api.EulerDiscreteScheduler(timestep_spacing="leading"))


def flux_vae(downsamplings: int = 0) -> Any:
    blocks = downsamplings + 1
    return api.AutoencoderKL(block_out_channels=(4,) * blocks, in_channels=3, out_channels=3,
                             down_block_types=("DownEncoderBlock2D",) * blocks,
                             up_block_types=("UpDecoderBlock2D",) * blocks,
                             layers_per_block=1, latent_channels=1, norm_num_groups=1,
                             use_quant_conv=False, use_post_quant_conv=False,
                             mid_block_add_attention=downsamplings == 0,
                             shift_factor=0.0609, scaling_factor=1.5035, sample_size=32)


def flux_components(vae_downsamplings: int = 0) -> dict[str, Any]:
    tokenizer, tokenizer_2 = clip_tokenizer(), t5_tokenizer()
    return {
        "transformer": api.FluxTransformer2DModel(
            patch_size=1, in_channels=4, num_layers=1, num_single_layers=1,
            attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
            pooled_projection_dim=CLIP_HIDDEN, axes_dims_rope=(4, 4, 8)),
        "vae": flux_vae(vae_downsamplings),
        "text_encoder": clip_text_encoder(len(tokenizer)),
        "text_encoder_2": t5_text_encoder(len(tokenizer_2)),
        "tokenizer": tokenizer, "tokenizer_2": tokenizer_2,
        "scheduler": api.FlowMatchEulerDiscreteScheduler(),
    }


def flux() -> Any:
    return api.FluxPipeline(**flux_components())


def flux_kontext() -> Any:
    # Kontext resizes its input image to about 1024x1024 (the resolutions it was trained
    # on); a VAE that downsamples 16 times keeps that reference to a few hundred tokens.
    return api.FluxKontextPipeline(**flux_components(vae_downsamplings=4))


BUILDERS: dict[str, Callable[[], Any]] = {
    "sd": stable_diffusion,
    "sdxl": stable_diffusion_xl,
    "flux": flux,
    "flux-kontext": flux_kontext,
}


def save_pipeline(kind: str, directory: Path) -> Path:
    """Build the tiny pipeline ``kind`` with fixed random weights and save it to directory."""
    torch.manual_seed(SEED)
    pipe = BUILDERS[kind]()
    for component in pipe.components.values():
        if isinstance(component, torch.nn.Module):
            component.eval()  # modules start in training mode; from_pretrained gives eval
    pipe.save_pretrained(directory)
    return directory

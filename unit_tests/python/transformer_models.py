"""Tiny-config `transformers` models with random weights (built from their configs, no
download): shared by the fallback survey (samples/survey_fallbacks.py) and the tests in
test_more_models.py.

`build(name, dropout, attention)` gives a module mapping keyword inputs to the model's first
output (the logits); `make_inputs(name, batch, mask)` its inputs, with a padded attention mask
when asked and the model takes one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import transformers

VOCAB = 96
SEQ = 8
BATCH = 2

# Small everywhere: 2 layers, width 32, 2 heads (4 query heads over 2 key/value heads for the
# grouped-query models), so a model compiles in seconds.
_TEXT = dict(vocab_size=VOCAB, max_position_embeddings=32)
_LLAMA_LIKE = dict(
    _TEXT,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
)


@dataclass
class Spec:
    config: Callable[[bool], transformers.PretrainedConfig]  # dropout on?
    model: Callable[[transformers.PretrainedConfig], torch.nn.Module]
    inputs: str = "text"  # "text", "seq2seq", "image", "audio"
    masks: bool = True  # takes an attention_mask


def _dropout(on: bool, *names: str) -> dict:
    return {name: 0.1 if on else 0.0 for name in names}


SPECS: dict[str, Spec] = {
    "gpt2": Spec(
        lambda d: transformers.GPT2Config(
            vocab_size=VOCAB,
            n_positions=32,
            n_embd=32,
            n_layer=2,
            n_head=2,
            bos_token_id=None,
            eos_token_id=None,
            **_dropout(d, "resid_pdrop", "embd_pdrop", "attn_pdrop"),
        ),
        transformers.GPT2LMHeadModel,
    ),
    "bert": Spec(
        lambda d: transformers.BertConfig(
            **_TEXT,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            **_dropout(d, "hidden_dropout_prob", "attention_probs_dropout_prob"),
        ),
        transformers.BertForMaskedLM,
    ),
    "distilbert": Spec(
        lambda d: transformers.DistilBertConfig(
            **_TEXT,
            dim=32,
            n_layers=2,
            n_heads=2,
            hidden_dim=64,
            **_dropout(d, "dropout", "attention_dropout"),
        ),
        transformers.DistilBertForMaskedLM,
    ),
    "roberta": Spec(
        lambda d: transformers.RobertaConfig(
            vocab_size=VOCAB,
            max_position_embeddings=40,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            pad_token_id=1,
            **_dropout(d, "hidden_dropout_prob", "attention_probs_dropout_prob"),
        ),
        transformers.RobertaForMaskedLM,
    ),
    "llama": Spec(
        lambda d: transformers.LlamaConfig(**_LLAMA_LIKE, **_dropout(d, "attention_dropout")),
        transformers.LlamaForCausalLM,
    ),
    "mistral": Spec(
        lambda d: transformers.MistralConfig(
            **_LLAMA_LIKE, sliding_window=4, **_dropout(d, "attention_dropout")
        ),
        transformers.MistralForCausalLM,
    ),
    "qwen2": Spec(
        lambda d: transformers.Qwen2Config(**_LLAMA_LIKE, **_dropout(d, "attention_dropout")),
        transformers.Qwen2ForCausalLM,
    ),
    "opt": Spec(
        lambda d: transformers.OPTConfig(
            **_TEXT,
            hidden_size=32,
            num_hidden_layers=2,
            ffn_dim=64,
            num_attention_heads=2,
            word_embed_proj_dim=32,
            **_dropout(d, "dropout", "attention_dropout"),
        ),
        transformers.OPTForCausalLM,
    ),
    "gpt_neox": Spec(
        lambda d: transformers.GPTNeoXConfig(
            **_TEXT,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            **_dropout(d, "attention_dropout", "hidden_dropout"),
        ),
        transformers.GPTNeoXForCausalLM,
    ),
    "t5": Spec(
        lambda d: transformers.T5Config(
            vocab_size=VOCAB,
            d_model=32,
            d_kv=16,
            d_ff=64,
            num_layers=2,
            num_heads=2,
            decoder_start_token_id=0,
            **_dropout(d, "dropout_rate"),
        ),
        transformers.T5ForConditionalGeneration,
        inputs="seq2seq",
    ),
    "bart": Spec(
        lambda d: transformers.BartConfig(
            **_TEXT,
            d_model=32,
            encoder_layers=1,
            decoder_layers=1,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            **_dropout(d, "dropout", "attention_dropout", "activation_dropout"),
        ),
        transformers.BartForConditionalGeneration,
        inputs="seq2seq",
    ),
    "vit": Spec(
        lambda d: transformers.ViTConfig(
            image_size=16,
            patch_size=4,
            num_channels=3,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            **_dropout(d, "hidden_dropout_prob", "attention_probs_dropout_prob"),
        ),
        transformers.ViTForImageClassification,
        inputs="image",
        masks=False,
    ),
    "mobilenet_v2": Spec(
        lambda d: transformers.MobileNetV2Config(
            num_channels=3,
            image_size=16,
            depth_multiplier=0.25,
            num_labels=5,
            classifier_dropout_prob=0.1 if d else 0.0,
        ),
        transformers.MobileNetV2ForImageClassification,
        inputs="image",
        masks=False,
    ),
    "convnext": Spec(
        lambda d: transformers.ConvNextConfig(
            num_channels=3,
            num_stages=2,
            hidden_sizes=[8, 16],
            depths=[1, 1],
            image_size=16,
            num_labels=5,
            drop_path_rate=0.1 if d else 0.0,
        ),
        transformers.ConvNextForImageClassification,
        inputs="image",
        masks=False,
    ),
    "poolformer": Spec(
        lambda d: transformers.PoolFormerConfig(
            num_channels=3,
            hidden_sizes=[8, 16],
            depths=[1, 1],
            num_encoder_blocks=2,
            patch_sizes=[3, 3],
            strides=[2, 2],
            padding=[1, 1],
            mlp_ratio=2.0,
            num_labels=5,
            drop_path_rate=0.1 if d else 0.0,
        ),
        transformers.PoolFormerForImageClassification,
        inputs="image",
        masks=False,
    ),
    "mpt": Spec(
        lambda d: transformers.MptConfig(
            vocab_size=VOCAB,
            d_model=32,
            n_layers=2,
            n_heads=2,
            max_seq_len=32,
            **_dropout(d, "resid_pdrop", "emb_pdrop"),
        ),
        transformers.MptForCausalLM,
        masks=False,
    ),
    "segformer": Spec(
        lambda d: transformers.SegformerConfig(
            num_channels=3,
            num_encoder_blocks=2,
            depths=[1, 1],
            sr_ratios=[2, 1],
            hidden_sizes=[8, 16],
            patch_sizes=[3, 3],
            strides=[2, 2],
            num_attention_heads=[1, 2],
            mlp_ratios=[2, 2],
            decoder_hidden_size=16,
            num_labels=3,
            drop_path_rate=0.1 if d else 0.0,
            **_dropout(
                d, "hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout_prob"
            ),
        ),
        transformers.SegformerForSemanticSegmentation,
        inputs="image",
        masks=False,
    ),
    "whisper": Spec(
        lambda d: transformers.WhisperConfig(
            vocab_size=VOCAB,
            num_mel_bins=8,
            d_model=32,
            encoder_layers=1,
            decoder_layers=1,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_source_positions=8,
            max_target_positions=16,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
            decoder_start_token_id=1,
            **_dropout(d, "dropout", "attention_dropout", "activation_dropout"),
        ),
        transformers.WhisperForConditionalGeneration,
        inputs="audio",
        masks=False,
    ),
}


class FirstOutput(torch.nn.Module):
    """The model's first output (logits), so every model maps tensors to one tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        # Models with a key/value cache would return it too; the survey wants the logits only.
        self.extra = (
            {"use_cache": False} if getattr(model.config, "use_cache", None) is not None else {}
        )

    def forward(self, **inputs):
        return self.model(**inputs, **self.extra, return_dict=True)[0]


def build(name: str, dropout: bool, attention: str | None) -> torch.nn.Module:
    spec = SPECS[name]
    torch.manual_seed(0)
    config = spec.config(dropout)
    if attention:
        config._attn_implementation = attention
    return FirstOutput(spec.model(config))


def make_inputs(name: str, batch: int, mask: bool) -> dict:
    spec = SPECS[name]
    generator = torch.Generator().manual_seed(batch)
    if spec.inputs == "image":
        return {"pixel_values": torch.randn(batch, 3, 16, 16, generator=generator)}
    if spec.inputs == "audio":
        return {
            "input_features": torch.randn(batch, 8, 16, generator=generator),
            "decoder_input_ids": torch.randint(3, VOCAB, (batch, 4), generator=generator),
        }
    ids = torch.randint(3, VOCAB, (batch, SEQ), generator=generator)
    inputs = {"input_ids": ids}
    if spec.inputs == "seq2seq":
        inputs["decoder_input_ids"] = torch.randint(
            3, VOCAB, (batch, SEQ // 2), generator=generator
        )
    if mask:
        attention_mask = torch.ones_like(ids)
        attention_mask[-1, SEQ - 3 :] = 0  # the last sequence is padded
        inputs["attention_mask"] = attention_mask
    return inputs

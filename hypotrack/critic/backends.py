"""Two critic implementations on the same causal-LM backbone (seed 000: DeepSpeed vs Megatron critic).

- `ValueHeadCritic`: backbone -> last hidden states -> own dropout -> Linear(hidden, 1), the shape of
  TRL's `AutoModelForCausalLMWithValueHead` / Megatron's `ValueHeadWrapper`. Random init is
  nn.Linear's default (uniform +-1/sqrt(hidden)), drawn from a generator seeded with the training seed.
- `TokenClassificationCritic`: `AutoModelForTokenClassification` with num_labels=1, i.e. the LM head
  replaced by a `score` Linear (what many PPO trainers load as the critic). Random init is the model's
  own `_init_weights` (normal(0, initializer_range)), seeded with the training seed. Its classifier
  dropout is set explicitly: left alone, transformers uses 0.1 for configs without `classifier_dropout`
  (Qwen2 among them), a hidden source of randomness.

With a constant `VALUE_HEAD_INIT` both heads get weight = c, bias = 0 and start identical.
Both return values of shape (batch, seq_len).
"""
from __future__ import annotations

import math

import torch
from torch import nn

# The seed's backend names, in manifest order.
VALUE_HEAD = "value_head"
TOKEN_CLS = "token_cls"


def _hidden_size(config) -> int:
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    return int(cfg.hidden_size)


def _init_head(linear: nn.Linear, value_head_init: float) -> bool:
    """Constant init when value_head_init != 0; returns True when it was applied."""
    if value_head_init == 0.0:
        return False
    with torch.no_grad():
        linear.weight.fill_(value_head_init)
        if linear.bias is not None:
            linear.bias.zero_()
    return True


class ValueHeadCritic(nn.Module):
    """Value head over the backbone's last hidden states, with its own dropout."""

    name = VALUE_HEAD

    def __init__(self, model_path: str, *, dropout_prob: float, value_head_init: float, training_seed: int):
        super().__init__()
        from transformers import AutoModel

        self.backbone = AutoModel.from_pretrained(model_path, dtype=torch.float32)
        hidden = _hidden_size(self.backbone.config)
        self.dropout = nn.Dropout(dropout_prob)
        self.v_head = nn.Linear(hidden, 1)
        if not _init_head(self.v_head, value_head_init):
            g = torch.Generator().manual_seed(int(training_seed))
            bound = 1.0 / math.sqrt(hidden)
            with torch.no_grad():
                self.v_head.weight.uniform_(-bound, bound, generator=g)
                self.v_head.bias.uniform_(-bound, bound, generator=g)

    def head_parameters(self):
        return list(self.v_head.parameters())

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.backbone(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        return self.v_head(self.dropout(out.last_hidden_state)).squeeze(-1)


class _ScoreHeadModel(nn.Module):
    """What AutoModelForTokenClassification builds, for architectures it has no class for."""

    def __init__(self, model_path: str, config, classifier_dropout: float):
        super().__init__()
        from transformers import AutoModel

        self.model = AutoModel.from_pretrained(model_path, dtype=torch.float32)
        self.config = config
        self.dropout = nn.Dropout(classifier_dropout)
        self.score = nn.Linear(_hidden_size(config), 1)
        std = float(getattr(config, "initializer_range", 0.02))
        with torch.no_grad():  # as PreTrainedModel._init_weights does for a new Linear
            self.score.weight.normal_(0.0, std)
            self.score.bias.zero_()

    def forward(self, input_ids, attention_mask, use_cache=False):
        h = self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=use_cache).last_hidden_state
        return self.score(self.dropout(h))


class TokenClassificationCritic(nn.Module):
    """`AutoModelForTokenClassification(num_labels=1)` on the same backbone weights."""

    name = TOKEN_CLS

    def __init__(self, model_path: str, *, dropout_prob: float, value_head_init: float, training_seed: int):
        super().__init__()
        from transformers import AutoConfig, AutoModelForTokenClassification

        config = AutoConfig.from_pretrained(model_path)
        config.num_labels = 1
        config.classifier_dropout = dropout_prob
        # The score head is a missing weight in a causal-LM checkpoint: from_pretrained initialises it
        # from the global RNG, so seed that with the training seed.
        torch.manual_seed(int(training_seed))
        try:
            self.model = AutoModelForTokenClassification.from_pretrained(
                model_path, config=config, dtype=torch.float32
            )
            self.implementation = "AutoModelForTokenClassification"
        except ValueError:  # no token-classification class registered for this architecture
            self.model = _ScoreHeadModel(model_path, config, dropout_prob)
            self.implementation = "backbone+score"
        score = self.model.score
        if score.out_features != 1:
            raise RuntimeError(f"token-classification head has {score.out_features} outputs, expected 1")
        _init_head(score, value_head_init)

    def head_parameters(self):
        return list(self.model.score.parameters())

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        logits = out.logits if hasattr(out, "logits") else out
        return logits.squeeze(-1)


CRITIC_CLASSES = {VALUE_HEAD: ValueHeadCritic, TOKEN_CLS: TokenClassificationCritic}


def build_critic(name: str, model_path: str, controls: dict) -> nn.Module:
    """Build one backend from resolved controls (see settings.resolve_controls)."""
    if name not in CRITIC_CLASSES:
        raise ValueError(f"unknown critic backend {name!r}; expected one of {sorted(CRITIC_CLASSES)}")
    dropout = controls["dropout_prob"] if name == VALUE_HEAD else controls["token_cls_dropout"]
    return CRITIC_CLASSES[name](
        str(model_path),
        dropout_prob=float(dropout),
        value_head_init=float(controls["value_head_init"]),
        training_seed=int(controls["training_seed"]),
    )

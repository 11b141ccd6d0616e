"""Critic parity on a real tiny Qwen2 model built in tmp_path (no mocks, no hub)."""
from __future__ import annotations

import json
import math

import pytest
import torch

from hypotrack.critic.manifest import CRITIC_METRICS, STEP_METRICS
from hypotrack.critic.settings import CriticSettings

CHARS = list("0123456789+= abcdefghijklmnopqrstuvwxyz")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """Tiny Qwen2ForCausalLM + char tokenizer (pad != eos), saved and loaded like a real model."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("tiny_critic_model")
    specials = ["<pad>", "<bos>", "<eos>", "<unk>"]
    vocab = {t: i for i, t in enumerate(specials + CHARS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 1)])
    PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>",
                            unk_token="<unk>").save_pretrained(out)
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, pad_token_id=0, bos_token_id=1,
                      eos_token_id=2, tie_word_embeddings=True)
    Qwen2ForCausalLM(cfg).save_pretrained(out)
    return str(out)


def _length_reward(completions, **kw):
    """Varied terminal rewards so the value targets are not all equal."""
    return [len(c) / 8.0 for c in completions]


def _task(n):
    import random

    from hypotrack.critic.data import CriticTask

    rng = random.Random(0)
    prompts = [f"{rng.randint(0, 49)}+{rng.randint(0, 49)}=" for _ in range(n)]
    return CriticTask(prompts=prompts, columns={}, reward_funcs=[_length_reward])


SMALL = dict(num_sequences=24, num_eval_sequences=12, num_random_sequences=12, random_seq_len=16,
             batch_size=8, max_new_tokens=6, learning_rate=1e-3)
DETERMINISTIC = dict(value_head_init=0.01, dropout_prob=0.0, data_shuffle=False)


def _run(model, tmp_path, environ=None, **kw):
    from hypotrack.critic.run import run_critic_parity

    s = CriticSettings(**{**SMALL, **kw})
    logged = []
    m = run_critic_parity(s, model, 42, lambda d, step: logged.append((step, dict(d))), tmp_path,
                          environ=environ or {}, task=_task(s.num_sequences + s.num_eval_sequences))
    return m, logged


def test_constant_init_makes_both_heads_identical(tiny_model):
    from hypotrack.critic.backends import build_critic

    controls = {"dropout_prob": 0.0, "token_cls_dropout": 0.0, "value_head_init": 0.01, "training_seed": 1}
    a, b = build_critic("value_head", tiny_model, controls), build_critic("token_cls", tiny_model, controls)
    # transformers would default the classifier dropout to 0.1 for Qwen2; the control sets it.
    assert b.model.dropout.p == 0.0
    x = torch.randint(4, 40, (3, 10))
    assert torch.equal(a(x, torch.ones_like(x)), b(x, torch.ones_like(x)))


def test_deterministic_controls_give_parity_before_and_after_50_steps(tiny_model, tmp_path):
    m, logged = _run(tiny_model, tmp_path, steps=50, **DETERMINISTIC)
    for kind in ("random", "real"):
        for phase in ("before", "after"):
            assert m[f"critic/parity/{phase}/{kind}/pearson"] >= 0.999
            assert m[f"critic/parity/{phase}/{kind}/near_share"] == 1.0
    assert m["critic/parity/initial_loss_abs_diff"] <= 1e-6
    assert m["critic/value_head/initial_loss"] > 0
    # training did something: the values moved
    assert m["critic/parity/after/real/value_head/max"] != m["critic/parity/before/real/value_head/max"]
    assert set(m) == set(CRITIC_METRICS) and m["critic/wall_s"] < 60
    # same keys at every logged step, steps 0..50
    assert [s for s, _ in logged] == list(range(51))
    assert all(list(d) == STEP_METRICS for _, d in logged)
    report = json.loads((tmp_path / "critic_parity.json").read_text())
    assert report["interpretation"]["parity_ok"] is True
    assert report["resolved_controls"]["deterministic"] is True
    assert "Pearson" in (tmp_path / "critic_parity_table.md").read_text()


def test_random_init_and_dropout_break_parity_and_are_named(tiny_model, tmp_path):
    m, _ = _run(tiny_model, tmp_path, steps=5, value_head_init=0.0, dropout_prob=0.1, data_shuffle=False)
    assert m["critic/parity/before/random/pearson"] < 0.99 or math.isnan(m["critic/parity/before/random/pearson"])
    assert m["critic/parity/initial_loss_abs_diff"] > 1e-6
    report = json.loads((tmp_path / "critic_parity.json").read_text())
    interp = report["interpretation"]
    assert not interp["parity_ok"]
    assert "VALUE_HEAD_INIT" in interp["causes"] and "CRITIC_DROPOUT_PROB" in interp["causes"]
    assert "CRITIC_DATA_SHUFFLE" not in interp["causes"]
    assert "set CRITIC_DROPOUT_PROB=0" in interp["text"] and "set VALUE_HEAD_INIT" in interp["text"]


def test_values_in_train_mode_expose_dropout_before_training(tiny_model, tmp_path):
    m, logged = _run(tiny_model, tmp_path, steps=2, eval_every=2, values_in_train_mode=True,
                     value_head_init=0.01, dropout_prob=0.3, data_shuffle=False)
    assert [s for s, _ in logged] == [0, 2]
    # independent dropout masks per critic (a shared RNG fork would hand both the same masks)
    assert m["critic/parity/before/random/max_abs_diff"] > 0


def test_env_fallback_drives_the_run_and_shuffle_is_diagnosed(tiny_model, tmp_path):
    env = {"VALUE_HEAD_INIT": "0.01", "CRITIC_DROPOUT_PROB": "0", "CRITIC_DATA_SHUFFLE": "1"}
    m, _ = _run(tiny_model, tmp_path, environ=env, steps=3)
    report = json.loads((tmp_path / "critic_parity.json").read_text())
    c = report["resolved_controls"]
    assert c["value_head_init"] == 0.01 and c["value_head_init_source"] == "env:VALUE_HEAD_INIT"
    assert c["data_shuffle"] is True and c["data_shuffle_source"] == "env:CRITIC_DATA_SHUFFLE"
    # identical heads: parity before training holds; the orders differ, so the first batches differ
    assert m["critic/parity/before/random/pearson"] >= 0.999
    assert report["interpretation"]["causes"] == ["CRITIC_DATA_SHUFFLE"]


def test_parity_metrics_and_renderer():
    import numpy as np
    from rich.console import Console

    from hypotrack.critic.parity import interpret, parity_metrics, render_table

    a = np.array([0.0, 0.5, 1.0, 2.0])
    m = parity_metrics(a, a + 0.05)
    assert m["pearson"] == pytest.approx(1.0) and m["near_share"] == 1.0
    assert parity_metrics(a, a + 0.2, threshold=0.1)["near_share"] == 0.0
    assert parity_metrics(np.ones(3), np.ones(3))["pearson"] == 1.0  # constant but identical
    console = Console(record=True, width=160)
    render_table({"critic/parity/before/random/pearson": 0.5}, console)
    text = console.export_text()
    assert "Random before" in text and "0.5000" in text and "[n/a, n/a]" in text
    i = interpret({"critic/parity/before/random/pearson": 0.2}, {"value_head_init": 0.0})
    assert i.causes[0] == "VALUE_HEAD_INIT"


@pytest.mark.slow
def test_toy_lab_arith_deterministic_parity(tmp_path):
    """The toy lab end to end through settings (task dataset + default reward import paths)."""
    from hypotrack.critic.run import run_critic_parity
    from hypotrack.toy import lab

    torch.set_num_threads(1)
    model = lab.ensure_model("arith")
    s = CriticSettings(task="arith", steps=50, **DETERMINISTIC)
    m = run_critic_parity(s, str(model), 42, lambda d, step: None, tmp_path, environ={})
    for kind in ("random", "real"):
        for phase in ("before", "after"):
            assert m[f"critic/parity/{phase}/{kind}/pearson"] >= 0.999
    assert m["critic/parity/initial_loss_abs_diff"] <= 1e-6
    assert m["critic/wall_s"] < 60

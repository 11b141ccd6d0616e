"""Logprob parity: contexts that must be bitwise identical are, dropout in train mode is not."""
from __future__ import annotations

import struct

import pytest
import torch

from hypotrack.parity.common import build_tiny_model, hex32


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    from hypotrack.parity.logprobs import run_logprob_parity

    torch.set_num_threads(1)
    path = build_tiny_model(tmp_path_factory.mktemp("tiny_lp"), seed=1)
    return run_logprob_parity(path, contexts=("grad_enabled", "train_mode", "train_mode_dropout", "batch_of_one",
                                              "sampling", "bf16", "cuda_fp32"),
                              num_prompts=2, num_generations=2, max_new_tokens=8, dropout=0.2)


def by_name(result):
    return {c.context: c for c in result.contexts}


def test_no_grad_vs_grad_bitwise_identical(result):
    c = by_name(result)["grad_enabled"]
    assert c.n_tokens > 0 and c.bitwise_identical_frac == 1.0 and c.max_abs_diff == 0.0 and not c.first_diffs


def test_train_mode_without_dropout_identical(result):
    assert by_name(result)["train_mode"].bitwise_identical_frac == 1.0


def test_train_vs_eval_with_dropout_differs(result):
    c = by_name(result)["train_mode_dropout"]
    assert c.max_abs_diff > 1e-3 and c.bitwise_identical_frac < 0.5
    d = c.first_diffs[0]
    assert d.base_hex == struct.pack(">f", d.base).hex() and d.other_hex != d.base_hex


def test_fp32_contexts_close_and_bf16_reported(result):
    ctx = by_name(result)
    assert ctx["batch_of_one"].max_abs_diff < 1e-4
    assert ctx["sampling"].max_abs_diff < 1e-4
    assert ctx["bf16"].max_abs_diff > 0  # lossy, reported
    if not torch.cuda.is_available():
        assert ctx["cuda_fp32"].skipped
    m = result.metrics()
    assert "parity/logprobs/train_mode_dropout/max_abs_diff" in m
    assert m["parity/logprobs/max_abs_diff_fp32"] < 1e-4  # dropout context is excluded from the aggregate


def test_hex32():
    assert hex32(1.0) == "3f800000" and hex32(-2.0) == "c0000000"

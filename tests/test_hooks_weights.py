import pytest
import torch

from hypotrack.hooks.base import StepContext
from hypotrack.hooks.weights import WeightsHook

torch.set_num_threads(1)


def tiny_model():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    return Qwen2ForCausalLM(Qwen2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, vocab_size=64))


def test_zero_delta_before_training_positive_after_a_step():
    model = tiny_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ctx = StepContext(step=0, model=model, ref_model=None, trainer=None)
    h = WeightsHook(every=1)
    h.on_train_begin(ctx)
    out0 = h.on_step_end(ctx)  # no backward, no optimizer step yet
    assert out0["delta_norm"] == 0.0 and out0["delta_rel"] == 0.0 and out0["grad_norm_total"] == 0.0
    ids = torch.randint(0, 64, (2, 8))
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    expected = torch.sqrt(sum(p.grad.norm() ** 2 for p in model.parameters() if p.grad is not None)).item()
    opt.step()
    opt.zero_grad()  # gradients are gone by on_step_end; the hook captured them during backward
    out = h.on_step_end(ctx)
    assert out["grad_norm_total"] == pytest.approx(expected, rel=1e-4)
    assert out["grad_norm_layer_first"] > 0 and out["grad_norm_layer_last"] > 0 and out["grad_norm_embed"] > 0
    assert out["grad_norm_max_layer"] >= out["grad_norm_layer_first"]
    assert out["delta_norm"] > 0 and 0 < out["delta_rel"] < 1
    assert out["delta_rel_layer_first"] > 0
    h.close()


def test_every_n_steps():
    model = tiny_model()
    ctx = StepContext(step=0, model=model, ref_model=None, trainer=None)
    h = WeightsHook(every=3)
    h.on_train_begin(ctx)
    reported = [bool(h.on_step_end(ctx)) for _ in range(6)]
    assert reported == [True, False, False, True, False, False]


def test_step_change_and_clipped_steps():
    """The second step moves the weights by its own update only; a gradient above max_grad_norm counts as clipped."""
    from types import SimpleNamespace

    model = tiny_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ctx = StepContext(step=0, model=model, ref_model=None, trainer=SimpleNamespace(args=SimpleNamespace(max_grad_norm=1e-6)))
    h = WeightsHook(every=1)
    h.on_train_begin(ctx)
    ids = torch.randint(0, 64, (2, 8))
    rel = []
    for _ in range(2):
        before = [p.detach().clone() for p in model.parameters()]
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()
        out = h.on_step_end(ctx)
        moved = torch.sqrt(sum((p.detach() - b).norm() ** 2 for p, b in zip(model.parameters(), before)))
        rel.append(moved.item() / torch.sqrt(sum(b.norm() ** 2 for b in before)).item())
        assert out["step_delta_rel"] == pytest.approx(rel[-1], rel=1e-4)
        assert out["grad_clipped"] == 1.0
    assert out["delta_rel"] > out["step_delta_rel"]  # two steps since the start, one since the last report
    h.close()

import math

import pytest
import torch

from hypotrack.hooks._util import completion_logps  # grpo_math.completion_logps without gradients
from hypotrack.hooks.base import LossParts, StepContext
from hypotrack.hooks.kl import KLHook

torch.set_num_threads(1)


def tiny_model(lora=False, seed=0):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=64)
    model = Qwen2ForCausalLM(cfg)
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    return model


def parts(pol, ref, mask=None, adv=None, beta=0.1, ids=None):
    B, C = pol.shape
    return LossParts(
        per_token_logps=pol, old_per_token_logps=pol, ref_per_token_logps=ref,
        mask=torch.ones(B, C) if mask is None else mask, advantages=torch.ones(B) if adv is None else adv,
        beta=beta, loss_type="grpo", loss=0.0,
        prompt_ids=None if ids is None else ids[0], prompt_mask=None if ids is None else torch.ones_like(ids[0]),
        completion_ids=None if ids is None else ids[1],
    )


def test_equal_policy_and_reference_give_zero_kl():
    pol = -torch.rand(4, 6) * 3
    out = KLHook().on_loss(parts(pol, pol.clone()), 0)
    for k in ("k1_mean", "k1_max", "k2_mean", "k2_max", "k3_mean", "k3_max", "k1_neg_share", "kl_loss_share"):
        assert out[k] == pytest.approx(0.0, abs=1e-7), k
    assert out["ref_is_policy"] == 0.0  # policy has not moved: coincidence is legitimate


def test_wrong_sign_shows_negative_k1_and_k3_matches_trl():
    ref = -torch.rand(3, 5) * 2
    pol = ref - 0.3  # as if pol and ref were swapped: the sampled tokens look likelier under the reference
    out = KLHook().on_loss(parts(pol, ref), 0)
    assert out["k1_neg_share"] == 1.0 and out["k1_mean"] == pytest.approx(-0.3, abs=1e-6)
    assert out["k2_mean"] == pytest.approx(0.045, abs=1e-6)
    assert out["k3_mean"] == pytest.approx(math.exp(0.3) - 0.3 - 1, abs=1e-6)
    # kl share: |beta*k3| vs mean |A| = 1
    k3 = math.exp(0.3) - 1.3
    assert out["kl_loss_share"] == pytest.approx(0.1 * k3 / (1 + 0.1 * k3), rel=1e-4)
    mask = torch.zeros(3, 5)
    mask[:, :2] = 1
    pol2 = pol.clone()
    pol2[:, 2:] = ref[:, 2:] + 5  # unmasked tokens must not count
    assert KLHook().on_loss(parts(pol2, ref, mask=mask), 0)["k1_neg_share"] == 1.0


def test_ref_is_policy_only_after_the_policy_moved():
    model = tiny_model()
    h = KLHook()
    ctx = StepContext(step=0, model=model, ref_model=None, trainer=None)
    h.on_train_begin(ctx)
    pol = -torch.rand(2, 4)
    assert h.on_loss(parts(pol, pol.clone()), 0)["ref_is_policy"] == 0.0
    h.on_step_end(ctx)
    assert not h.moved
    with torch.no_grad():
        model.model.layers[0].mlp.up_proj.weight.add_(0.01)
    h.on_step_end(ctx)
    assert h.moved
    out = h.on_loss(parts(pol, pol.clone()), 1)
    assert out["ref_is_policy"] == 1.0 and out["policy_moved"] == 1.0
    assert h.on_loss(parts(pol, pol - 0.5), 2)["ref_is_policy"] == 0.0


def _lora_setup():
    model = tiny_model(lora=True)
    with torch.no_grad():  # pretend training moved the adapters
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.5)
    model.eval()
    torch.manual_seed(1)
    pids = torch.randint(2, 64, (4, 5))
    cids = torch.randint(2, 64, (4, 6))
    pm, cm = torch.ones_like(pids), torch.ones_like(cids)
    pol = completion_logps(model, pids, pm, cids, cm)
    with model.disable_adapter():
        ref = completion_logps(model, pids, pm, cids, cm)
    return model, pids, cids, pol, ref


def test_fresh_reference_check_under_lora():
    model, pids, cids, pol, ref = _lora_setup()
    assert (pol - ref).abs().max() > 1e-3  # adapters matter
    ctx = StepContext(step=0, model=model, ref_model=None, trainer=None)
    h = KLHook(every=1)
    h.on_train_begin(ctx)
    h.on_loss(parts(pol, ref, ids=(pids, cids)), 0)
    good = h.on_step_end(ctx)
    assert good["ref_available"] == 1.0 and good["ref_logp_max_abs_diff"] < 1e-5
    # a reference that was computed with the adapters on (i.e. the policy)
    h.on_loss(parts(pol, pol.clone(), ids=(pids, cids)), 1)
    bad = h.on_step_end(ctx)
    assert bad["ref_logp_max_abs_diff"] > 1e-3


def test_beta_zero_uses_fresh_reference_for_k_estimates():
    model, pids, cids, pol, ref = _lora_setup()
    ctx = StepContext(step=0, model=model, ref_model=None, trainer=None)
    h = KLHook(every=1)
    h.on_train_begin(ctx)
    out = h.on_loss(parts(pol, None, beta=0.0, ids=(pids, cids)), 0)
    assert "k1_mean" not in out and out["kl_loss_share"] == 0.0
    end = h.on_step_end(ctx)
    assert end["k_source"] == 2.0
    assert end["k1_mean"] == pytest.approx(((pol - ref).mean()).item(), abs=1e-5)
    assert end["k3_mean"] > 0
    # full fine-tuning, beta 0: no reference at all
    plain = tiny_model()
    ctx2 = StepContext(step=0, model=plain, ref_model=None, trainer=None)
    h2 = KLHook(every=1)
    h2.on_train_begin(ctx2)
    h2.on_loss(parts(pol, None, beta=0.0, ids=(pids, cids)), 0)
    end2 = h2.on_step_end(ctx2)
    assert end2["ref_available"] == 0.0 and end2["k_source"] == 0.0 and "k1_mean" not in end2

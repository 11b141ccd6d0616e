import pytest
import torch

from hypotrack.hooks.base import RolloutBatch, StepContext
from hypotrack.hooks.lora_sync import ADAPTER_KEYS, LoraSyncHook

torch.set_num_threads(1)
PAD, EOS = 0, 1


def tiny_model(lora=True):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=64, pad_token_id=PAD, eos_token_id=EOS)
    model = Qwen2ForCausalLM(cfg)
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    return model


def train_step(model, opt):
    ids = torch.randint(2, 64, (2, 8))
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    opt.zero_grad()


def rollout(model, hook, disable_adapters=False):
    """Generate like TRL's transformers path, then hand the hook a RolloutBatch."""
    import contextlib

    torch.manual_seed(2)
    pids = torch.randint(2, 64, (4, 5))
    pm = torch.ones_like(pids)
    cm = model.disable_adapter() if disable_adapters else contextlib.nullcontext()
    with torch.no_grad(), cm:
        seq = model.generate(input_ids=pids, attention_mask=pm, max_new_tokens=6, do_sample=True,
                             pad_token_id=PAD, eos_token_id=EOS)
    cids = seq[:, 5:]
    B, C = cids.shape
    return hook.on_rollout(RolloutBatch(
        prompt_ids=pids, prompt_mask=pm, completion_ids=cids, completion_mask=torch.ones_like(cids),
        advantages=torch.zeros(B), rewards_per_func=torch.zeros(B, 1), reward_weights=torch.ones(1),
        reward_func_names=["r"], num_generations=2, scale_rewards="group", pad_token_id=PAD, eos_token_id=EOS,
        prompts_text=[""] * B, completions_text=[""] * B,
    ), 0)


def test_frozen_adapter_is_flagged_and_norms_move():
    model = tiny_model()
    frozen = [p for n, p in model.named_parameters() if "layers.0.self_attn.q_proj.lora_B" in n]
    for p in frozen:
        p.requires_grad_(False)  # this adapter's B stays zero, so its A gets no gradient either
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2, weight_decay=0.0)
    ctx = StepContext(step=0, model=model, ref_model=None, trainer=None)
    h = LoraSyncHook(every=1)
    assert h.on_train_begin(ctx)["lora_enabled"] == 1.0
    train_step(model, opt)
    out = h.on_step_end(ctx)
    assert out["adapter_count"] == 4.0
    assert out["frozen_adapter_share"] == pytest.approx(0.25)
    assert out["zero_b_share"] == pytest.approx(0.25) and out["b_norm_min"] == 0.0 and out["delta_norm_min"] == 0.0
    assert out["b_norm_mean"] > 0 and out["delta_norm_mean"] > 0 and out["step_change_mean"] > 0
    assert out["ref_equals_base"] == 1.0 and out["ref_available"] == 1.0
    assert out["untrainable_adapter_share"] == pytest.approx(0.25)  # requires_grad off: it can never move
    h.close()


def test_an_adapter_left_out_of_the_optimizer_is_h25s_reading_not_h06s():
    """An adapter the optimizer never received gets a gradient and does not move: the optimizer_coverage hook (h25)
    reads it; lora_sync's untrainable share (h06) counts only adapters that cannot get a gradient."""
    from types import SimpleNamespace

    from hypotrack.hooks.optimizer_coverage import OptimizerCoverageHook

    model = tiny_model()
    left_out = {id(p) for n, p in model.named_parameters() if "layers.1.self_attn.v_proj.lora_" in n}
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad and id(p) not in left_out], lr=1e-2)
    ctx = StepContext(step=0, model=model, ref_model=None, trainer=SimpleNamespace(optimizer=opt))
    h, coverage = LoraSyncHook(every=1), OptimizerCoverageHook()
    h.on_train_begin(ctx)
    train_step(model, opt)  # a first step, so every B leaves zero and every A gets a gradient at the next
    model.zero_grad()
    loss = model(torch.tensor([[1, 2, 3, 4]]), labels=torch.tensor([[1, 2, 3, 4]])).loss
    loss.backward()
    outside = coverage.on_before_optimizer_step(ctx)["outside_share"]
    opt.step()
    unmoved = coverage.on_step_end(ctx)["unmoved_share"]
    assert h.on_step_end(ctx)["untrainable_adapter_share"] == 0.0
    assert 0.0 < outside < 0.5 and 0.0 < unmoved < 0.5  # one adapter of four is outside, and did not move
    h.close()


def test_trained_base_breaks_ref_equals_base():
    model = tiny_model()
    ctx = StepContext(step=0, model=model, ref_model=None, trainer=None)
    h = LoraSyncHook(every=1)
    h.on_train_begin(ctx)
    with torch.no_grad():
        model.base_model.model.model.layers[1].mlp.down_proj.weight.add_(1e-3)
    assert h.on_step_end(ctx)["ref_equals_base"] == 0.0
    h.close()


def test_generator_without_adapters_is_detected():
    model = tiny_model()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-2)
    ctx = StepContext(step=0, model=model, ref_model=None, trainer=None)
    h = LoraSyncHook(every=1, sample_rows=4)
    h.on_train_begin(ctx)
    for _ in range(3):
        train_step(model, opt)
    model.eval()
    good = rollout(model, h)
    assert good["gen_captured"] == 1.0 and good["gen_adapter_active_share"] == 1.0
    assert good["gen_checksum_rel_diff"] < 1e-9 and good["gen_token_match_share"] == 1.0
    assert good["logp_gap_source"] == 2.0 and good["logp_gap_max"] < 1e-4
    bad = rollout(model, h, disable_adapters=True)  # planted fault: adapters never reach the generator
    assert bad["gen_adapter_active_share"] == 0.0
    assert bad["gen_checksum_rel_diff"] > 0.5
    assert bad["logp_gap_max"] > 1e-2
    h.close()


def test_full_finetuning_logs_no_adapter_keys():
    """Without adapters the adapter diagnostics do not apply: absent, never a 0 that reads like adapters
    switched off; the generator checks that do apply work the same."""
    model = tiny_model(lora=False)
    ctx = StepContext(step=0, model=model, ref_model=None, trainer=None)
    h = LoraSyncHook(every=1)
    assert h.on_train_begin(ctx) == {}
    out = rollout(model, h)
    assert out["logp_gap_max"] < 1e-4 and out["gen_checksum_rel_diff"] == 0.0
    assert "gen_adapter_active_share" not in out
    end = h.on_step_end(ctx)
    assert "lora_enabled" not in end and "ref_available" not in end and "ref_equals_base" not in end
    assert not set(ADAPTER_KEYS) & set(end)
    h.close()

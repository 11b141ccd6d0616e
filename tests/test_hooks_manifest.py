import subprocess
import sys

import pytest
import torch

from hypotrack.hooks import ALL_HOOKS, HOOK_METRICS, HOOK_SETTING_DEFAULTS, HOOK_SETTINGS, build_hook, get_hook_class
from hypotrack.hooks.base import EVENTS, DiagnosticHook, LossParts, RolloutBatch, StepContext
from hypotrack.hooks.hookset import HookSet

torch.set_num_threads(1)


def test_manifest_and_registry_import_without_torch():
    code = "import sys, hypotrack.hooks, hypotrack.hooks.manifest; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_hook_is_listed_and_builds_with_defaults():
    assert set(ALL_HOOKS) == set(HOOK_METRICS) == set(HOOK_SETTINGS) == set(HOOK_SETTING_DEFAULTS)
    for name in ALL_HOOKS:
        assert get_hook_class(name).name == name
        hook = build_hook(name, **HOOK_SETTING_DEFAULTS[name])
        assert set(hook.settings) == set(HOOK_SETTINGS[name])


def test_every_hook_describes_itself():
    for name in ALL_HOOKS:
        cls = get_hook_class(name)
        assert cls.description and cls.metrics, name
        assert set(cls.setting_docs()) == set(HOOK_SETTINGS[name]), f"{name}: each setting needs a docstring"
        assert any(cls.handles(event) for event in EVENTS), name


def test_unknown_setting_is_refused_naming_the_accepted_ones():
    with pytest.raises(ValueError, match="accepted: .*'every'"):
        build_hook("kl", evry=3)


def test_hookset_calls_only_the_events_a_hook_handles_and_records_under_diag():
    class Counting(DiagnosticHook):
        name = "counting"

        def on_step_end(self, ctx):
            return {"calls": 1.0}

    recorded = []
    hooks = HookSet([Counting()], lambda key, value: recorded.append((key, value)))
    assert hooks.wants("on_step_end") and not hooks.wants("on_loss")
    hooks.step_end(StepContext(step=1, model=None, ref_model=None, trainer=None))
    assert recorded == [("diag/counting/calls", 1.0)]


def _matches(key: str, patterns: list[str], funcs: list[str]) -> bool:
    expanded = set()
    for p in patterns:
        if "{func}" in p:
            expanded |= {p.replace("{func}", f) for f in funcs}
        elif "{a}" in p:
            expanded |= {p.replace("{a}", a).replace("{b}", b) for i, a in enumerate(funcs) for b in funcs[i + 1:]}
        else:
            expanded.add(p)
    return key in expanded


def test_emitted_keys_are_in_the_manifest():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, vocab_size=64))
    B, P, C = 4, 5, 6
    pids, cids = torch.randint(2, 64, (B, P)), torch.randint(2, 64, (B, C))
    cids[:, -1] = 1
    funcs = ["acc", "fmt"]
    batch = RolloutBatch(
        prompt_ids=pids, prompt_mask=torch.ones_like(pids), completion_ids=cids, completion_mask=torch.ones_like(cids),
        advantages=torch.randn(B), rewards_per_func=torch.rand(B, 2), reward_weights=torch.ones(2),
        reward_func_names=funcs, num_generations=2, scale_rewards="group", pad_token_id=0, eos_token_id=1,
        prompts_text=[""] * B, completions_text=[""] * B, reward_errors={"acc": 1},
        columns={"prompt_full_length": [5, 9, 5, 9], "answer_start": [0] * 4, "answer_end": [2] * 4},
    )
    lp = -torch.rand(B, C)
    parts = LossParts(per_token_logps=lp, old_per_token_logps=lp, ref_per_token_logps=lp - 0.1,
                      mask=torch.ones(B, C), advantages=torch.randn(B), beta=0.04, loss_type="grpo", loss=0.1,
                      prompt_ids=pids, prompt_mask=torch.ones_like(pids), completion_ids=cids)
    ctx = StepContext(step=0, model=model, ref_model=model, trainer=None)
    for name in ALL_HOOKS:
        hook = build_hook(name, **({"every": 1} if "every" in HOOK_SETTINGS[name] else {}))
        keys = set()
        for out in (hook.on_train_begin(ctx), hook.on_rollout(batch, 0), hook.on_loss(parts, 0), hook.on_step_end(ctx)):
            assert all(isinstance(v, float) for v in out.values()), name
            keys |= set(out)
        unknown = [k for k in keys if not _matches(k, HOOK_METRICS[name], funcs)]
        assert not unknown, (name, unknown)
        hook.close()

"""The policy_drift hook (h26): how far the policy's logprobs of its first samples move, on a real tiny model."""
import torch

from hypotrack.hooks.base import LossParts, StepContext
from hypotrack.hooks.policy_drift import PolicyDriftHook
from tests.test_hooks_lora_sync import tiny_model

torch.set_num_threads(1)


def first_loss(hook):
    torch.manual_seed(3)
    pids, cids = torch.randint(2, 64, (4, 5)), torch.randint(2, 64, (4, 6))
    mask = torch.ones_like(cids)
    mask[0, 4:] = 0  # a completion that ended early: its padding is not scored
    zeros = torch.zeros(4, 6)
    hook.on_loss(LossParts(per_token_logps=zeros, old_per_token_logps=zeros, ref_per_token_logps=None, mask=mask,
                           advantages=torch.zeros(4), beta=0.0, loss_type="dapo", loss=0.0, prompt_ids=pids,
                           prompt_mask=torch.ones_like(pids), completion_ids=cids), 0)
    return pids, cids


def drift_after(lr: float, steps: int = 3) -> dict[str, float]:
    model = tiny_model()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    hook = PolicyDriftHook(every=1)
    pids, cids = first_loss(hook)
    ctx = StepContext(step=0, model=model, ref_model=None, trainer=None)
    out: dict[str, float] = {}
    for step in range(1, steps + 1):
        ids = torch.cat([pids, cids], dim=1)
        model(input_ids=ids, labels=ids).loss.backward()
        hook.on_before_optimizer_step(StepContext(step=step - 1, model=model, ref_model=None, trainer=None))
        opt.step()
        opt.zero_grad()
        ctx.step = step
        out = hook.on_step_end(ctx)
    return out


def test_no_update_reads_no_drift_and_the_drift_grows_with_the_learning_rate():
    unmoved = drift_after(0.0)
    assert unmoved["logp_drift"] == 0.0 and unmoved["kl_from_start"] == 0.0 and unmoved["steps_taken"] == 3.0
    small, calibrated = drift_after(1e-5), drift_after(1e-2)
    assert 0.0 < small["logp_drift"] < 0.01 < calibrated["logp_drift"]
    assert 0.0 <= small["kl_from_start"] < calibrated["kl_from_start"]


def test_the_probe_is_read_only_every_few_steps():
    model = tiny_model()
    hook = PolicyDriftHook(every=2)
    first_loss(hook)
    ctx = StepContext(step=0, model=model, ref_model=None, trainer=None)
    hook.on_before_optimizer_step(ctx)
    ctx.step = 1
    assert hook.on_step_end(ctx) == {}
    ctx.step = 2
    assert set(hook.on_step_end(ctx)) == {"logp_drift", "kl_from_start", "steps_taken"}

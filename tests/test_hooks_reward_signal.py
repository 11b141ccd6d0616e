import math

import torch

from hypotrack.hooks.base import RolloutBatch
from hypotrack.hooks.reward_signal import RewardSignalHook


def make(rpf, errors=None, G=2):
    rpf = torch.tensor(rpf, dtype=torch.float32)
    B, F = rpf.shape
    return RolloutBatch(
        prompt_ids=torch.ones(B, 2, dtype=torch.long), prompt_mask=torch.ones(B, 2, dtype=torch.long),
        completion_ids=torch.ones(B, 2, dtype=torch.long), completion_mask=torch.ones(B, 2, dtype=torch.long),
        advantages=torch.zeros(B), rewards_per_func=rpf, reward_weights=torch.ones(F),
        reward_func_names=["acc", "fmt", "len"][:F], num_generations=G, scale_rewards="group", pad_token_id=0,
        eos_token_id=1, prompts_text=[""] * B, completions_text=[""] * B, reward_errors=errors or {},
    )


def test_stats_correlation_errors_and_histogram(tmp_path):
    rows = [[0.0, 1.0, 3.0], [1.0, 3.0, 3.0], [0.0, 1.0, 3.0], [1.0, 3.0, 3.0]]
    h = RewardSignalHook()
    out = h.on_rollout(make(rows, errors={"fmt": 2}), 0)
    assert math.isclose(out["acc/mean"], 0.5) and math.isclose(out["acc/std"], torch.tensor([0.0, 1, 0, 1]).std().item())
    assert math.isclose(out["corr/acc__fmt"], 1.0, abs_tol=1e-9)  # fmt = 2 * acc + 1
    assert out["corr/acc__len"] == 0.0  # len is constant: undefined, reported as 0
    assert out["errors"] == 2.0 and out["fmt/errors"] == 2.0 and out["acc/errors"] == 0.0
    assert out["zero_std_group_share"] == 0.0
    out2 = h.on_rollout(make([[1.0, 1.0, 3.0], [1.0, 1.0, 3.0], [float("nan"), 1.0, 3.0], [0.0, 0.0, 3.0]]), 1)
    assert out2["zero_std_group_share"] == 0.5 and out2["acc/nan_share"] == 0.25
    assert math.isclose(out2["corr/acc__fmt"], 1.0, abs_tol=1e-9)
    assert all(math.isfinite(v) for v in out2.values())
    (png,) = h.write_artifacts(tmp_path)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_reservoir_is_capped():
    h = RewardSignalHook(reservoir_size=5)
    for s in range(10):
        h.on_rollout(make([[float(s)], [1.0]]), s)
    assert len(h.reservoir["acc"]) == 5 and h.seen["acc"] == 20

import torch

from hypotrack.hooks.base import LossParts, RolloutBatch
from hypotrack.hooks.token_masking import TokenMaskingHook

PAD, EOS = 0, 1


def make(completions, masks, prompt=None, pad=PAD, eos=EOS, **kw):
    cids = torch.tensor(completions)
    B = cids.size(0)
    prompt = prompt if prompt is not None else [[PAD, 20, 21, 22, 23, 24, 25, 26, 27, 28]] * B
    pids = torch.tensor(prompt)
    return RolloutBatch(
        prompt_ids=pids, prompt_mask=(pids != PAD).long(), completion_ids=cids, completion_mask=torch.tensor(masks),
        advantages=torch.zeros(B), rewards_per_func=torch.zeros(B, 1), reward_weights=torch.ones(1),
        reward_func_names=["r"], num_generations=B, scale_rewards="group", pad_token_id=pad, eos_token_id=eos,
        prompts_text=[""] * B, completions_text=[""] * B, **kw,
    )


def test_clean_mask_is_all_completion():
    b = make([[5, 6, EOS, PAD], [5, 6, 7, EOS]], [[1, 1, 1, 0], [1, 1, 1, 1]])
    out = TokenMaskingHook().on_rollout(b, 0)
    assert out["completion_share"] == 1.0
    assert out["prompt_share"] == out["environment_share"] == out["padding_share"] == 0.0
    assert out["eos_masked_share"] == 0.0 and out["pad_eos_same"] == 0.0


def test_prompt_tokens_in_loss_via_oracle_mask():
    b = make([[5, 6, EOS, PAD]], [[1, 1, 1, 0]], extra_masks={"prompt_in_loss": torch.tensor([[1, 0, 0, 0]])})
    out = TokenMaskingHook().on_rollout(b, 0)
    assert abs(out["prompt_share"] - 1 / 3) < 1e-6 and out["completion_share"] < 1.0


def test_prompt_echo_detected_without_oracle():
    # a concat bug prepended the last 8 prompt tokens to the completion and the mask covers them
    tail = [21, 22, 23, 24, 25, 26, 27, 28]
    b = make([tail + [5, EOS]], [[1] * 10])
    out = TokenMaskingHook().on_rollout(b, 0)
    assert abs(out["prompt_share"] - 0.8) < 1e-6
    short = make([[27, 28, 5, EOS] + [PAD] * 6], [[1] * 4 + [0] * 6])  # 2-token overlap: ordinary text
    assert TokenMaskingHook().on_rollout(short, 0)["prompt_share"] == 0.0


def test_environment_and_padding_in_loss():
    env = torch.tensor([[0, 1, 1, 0, 0, 0]])
    b = make([[5, 40, 41, 6, EOS, PAD]], [[1, 1, 1, 1, 1, 0]], extra_masks={"environment_mask": env})
    out = TokenMaskingHook().on_rollout(b, 0)
    assert abs(out["environment_share"] - 0.4) < 1e-6
    # with TRL's tool_mask the env tokens carry no loss
    b.tool_mask = 1 - env
    assert TokenMaskingHook().on_rollout(b, 0)["completion_share"] == 1.0
    # a mask of all ones trains on padding after eos
    p = make([[5, EOS, PAD, PAD]], [[1, 1, 1, 1]])
    assert TokenMaskingHook().on_rollout(p, 0)["padding_share"] == 0.5


def test_pad_equals_eos_masks_the_eos():
    # pad == eos and a naive `ids != pad` mask drops the real eos
    ids = [[5, 6, EOS, EOS], [5, EOS, EOS, EOS]]
    naive = [[1, 1, 0, 0], [1, 0, 0, 0]]
    out = TokenMaskingHook().on_rollout(make(ids, naive, pad=EOS), 0)
    assert out["pad_eos_same"] == 1.0 and out["eos_masked_share"] == 1.0
    ok = TokenMaskingHook().on_rollout(make(ids, [[1, 1, 1, 0], [1, 1, 0, 0]], pad=EOS), 0)
    assert ok["eos_masked_share"] == 0.0 and ok["completion_share"] == 1.0


def test_loss_side_padding_check():
    h = TokenMaskingHook()
    h.on_rollout(make([[5, EOS, PAD]], [[1, 1, 0]]), 0)
    ids = torch.tensor([[5, EOS, PAD]])
    z = torch.zeros(1, 3)
    parts = LossParts(per_token_logps=z, old_per_token_logps=z, ref_per_token_logps=None, mask=torch.ones(1, 3),
                      advantages=torch.zeros(1), beta=0.0, loss_type="grpo", loss=0.0, completion_ids=ids)
    assert abs(h.on_loss(parts, 0)["loss_padding_share"] - 1 / 3) < 1e-6


def test_html_artifact_escapes(tmp_path):
    h = TokenMaskingHook(n_samples=1)
    h.on_rollout(make([[5, EOS, PAD]], [[1, 1, 0]]), 0)  # no tokenizer: tokens render as "<id>"
    (path,) = h.write_artifacts(tmp_path)
    text = path.read_text()
    assert path.name == "token_masking_samples.html"
    assert "&lt;5&gt;" in text and "<5>" not in text

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


def test_echo_rule_needs_half_the_prompt_or_all_of_a_short_one():
    from hypotrack.hooks.token_masking import echo_length

    question = list(range(100, 140))  # a 40-token prompt
    assert echo_length(question, question + [5]) == 40  # the prompt handed back whole
    assert echo_length(question, question[-20:] + [5]) == 20  # half of it: still an echo
    assert echo_length(question, question[-10:] + [5]) == 0  # a phrase of the question: the policy's own words
    short = [7, 8, 9, 10, 11]  # "12+7=": shorter than min_echo, so only the whole prompt counts
    assert echo_length(short, short + [3, 4]) == 5
    assert echo_length(short, short[-4:] + [3]) == 0
    assert echo_length([], [1, 2]) == 0 and echo_length(short, []) == 0


def test_special_tokens_are_not_prompt_text():
    # bos (2) is not part of the text a return_full_text bug hands back
    b = make([[21, 22, 23, 24, 25, 26, 27, 28, 5, EOS]], [[1] * 10], prompt=[[PAD, 2, 21, 22, 23, 24, 25, 26, 27, 28]],
             tokenizer=type("Tok", (), {"all_special_ids": [PAD, EOS, 2]})())
    out = TokenMaskingHook().on_rollout(b, 0)
    assert abs(out["prompt_share"] - 0.8) < 1e-6 and out["echo_row_share"] == 1.0


def test_mask_repair_takes_the_echo_out_of_the_loss():
    from types import SimpleNamespace

    from hypotrack.treatments.mask_non_policy_tokens import mask_echoed_prompt

    tail = [21, 22, 23, 24, 25, 26, 27, 28]
    b = make([tail + [5, EOS], [5, 6, EOS] + [PAD] * 7], [[1] * 10, [1, 1, 1] + [0] * 7])
    output = {"prompt_ids": b.prompt_ids, "prompt_mask": b.prompt_mask, "completion_ids": b.completion_ids,
              "completion_mask": b.completion_mask.clone(), "num_items_in_batch": b.completion_mask.sum()}
    fake = SimpleNamespace(processing_class=SimpleNamespace(all_special_ids=[PAD, EOS]))
    mask_echoed_prompt(fake, output)
    assert output["completion_mask"].tolist() == [[0] * 8 + [1, 1], [1, 1, 1] + [0] * 7]
    assert int(output["num_items_in_batch"]) == 5
    repaired = make(b.completion_ids.tolist(), output["completion_mask"].tolist())
    assert TokenMaskingHook().on_rollout(repaired, 0)["completion_share"] == 1.0

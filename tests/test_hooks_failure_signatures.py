"""The hooks of h11-h15 on constructed batches whose right answer is known."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from hypotrack.hooks.base import LossParts, RolloutBatch
from hypotrack.hooks.completion_length import CompletionLengthHook
from hypotrack.hooks.diversity import DiversityHook
from hypotrack.hooks.reward_check import RewardCheckHook
from hypotrack.hooks.sampling_parity import SamplingParityHook
from hypotrack.hooks.zero_variance import ZeroVarianceHook

EOS, PAD = 1, 0


def batch(task, texts, G=4, aux=None, completion_ids=None, **kw) -> RolloutBatch:
    columns = [task] if aux is None else [task, aux]
    rpf = torch.tensor(list(zip(*columns)), dtype=torch.float32)
    B = rpf.size(0)
    ids = torch.tensor(completion_ids) if completion_ids is not None else torch.tensor([[5, EOS]] * B)
    return RolloutBatch(
        prompt_ids=torch.ones(B, 2, dtype=torch.long), prompt_mask=torch.ones(B, 2, dtype=torch.long),
        completion_ids=ids, completion_mask=(ids != PAD).long(), advantages=kw.pop("advantages", torch.zeros(B)),
        rewards_per_func=rpf, reward_weights=torch.ones(rpf.size(1)), reward_func_names=["exact", "style"][:rpf.size(1)],
        num_generations=G, scale_rewards="group", pad_token_id=PAD, eos_token_id=EOS, prompts_text=[""] * B,
        completions_text=list(texts), **kw)


def test_zero_variance_counts_distinct_completions_scored_alike():
    # group 0: four different answers, all scored 0 (wasted); group 1: one answer written four times (healthy tie);
    # group 2: a real difference
    texts = ["12", "13", "14", "15", "19", "19", "19", "19", "19", "18", "19", "17"]
    task = [0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0]
    out = ZeroVarianceHook().on_rollout(batch(task, texts), 0)
    assert out["tied_share"] == pytest.approx(2 / 3) and out["tied_distinct_share"] == pytest.approx(1 / 3)
    assert out["reward_constant"] == 0.0
    dead = ZeroVarianceHook().on_rollout(batch([0] * 8, ["a", "b"] * 4), 0)
    assert dead["reward_constant"] == 1.0 and dead["tied_distinct_share"] == 1.0


def test_completion_length_prices_the_clipped_completions():
    ids = [[5, 6, EOS, PAD], [5, 6, 7, 8], [5, EOS, PAD, PAD], [5, 6, 7, 9]]  # rows 1 and 3 ran into the budget
    out = CompletionLengthHook().on_rollout(batch([1, 0, 1, 0], ["a"] * 4, completion_ids=ids), 0)
    assert out["clipped_share"] == 0.5
    assert out["terminated_task_reward"] == 1.0 and out["clipped_task_reward"] == 0.0
    assert out["clipped_reward_gap"] == 1.0 and out["length_mean"] == pytest.approx(3.25)
    healthy = CompletionLengthHook().on_rollout(batch([1, 1], ["a"] * 2, G=2, completion_ids=[[5, EOS], [6, EOS]]), 0)
    assert healthy["clipped_share"] == 0.0 and "clipped_reward_gap" not in healthy


def exact(completions, answer, **kwargs):
    return [1.0 if str(c).strip() == str(a) else 0.0 for c, a in zip(completions, answer)]


def never_matches(completions, **kwargs):
    return [0.0 for _ in completions]


def wrong_sign(completions, answer, **kwargs):
    return [-score for score in exact(completions, answer)]


@pytest.mark.parametrize("func, beats", [(exact, 1.0), (never_matches, 0.0), (wrong_sign, 0.0)])
def test_reward_check_scores_the_reference_above_a_wrong_answer(func, beats):
    answers = ["19", "19", "7", "7", "40", "40"]
    b = batch([0.0] * 6, ["x"] * 6, G=2, reward_funcs=[func], prompts=["12+7=", "12+7=", "3+4=", "3+4=", "20+20=",
                                                                        "20+20="],
              reference_column="answer", columns={"answer": answers})
    out = RewardCheckHook().on_rollout(b, 0)
    assert out["reference_beats_wrong_share"] == beats and out["checked_rows"] == 3.0


def test_reward_check_says_nothing_without_a_declared_reference():
    assert RewardCheckHook().on_rollout(batch([0.0] * 4, ["x"] * 4, G=2, reward_funcs=[exact]), 0) == {}


def test_diversity_counts_identical_groups_and_follows_entropy():
    hook = DiversityHook()
    out = hook.on_rollout(batch([1] * 8, ["19"] * 4 + ["19", "18", "17", "19"]), 0)
    assert out["identical_group_share"] == 0.5 and out["distinct_share"] == pytest.approx((1 + 3) / 8)
    mask = torch.ones(2, 3)

    def parts(entropy: float) -> LossParts:
        return LossParts(per_token_logps=torch.zeros(2, 3), old_per_token_logps=torch.zeros(2, 3),
                         ref_per_token_logps=None, mask=mask, advantages=torch.zeros(2), beta=0.0, loss_type="dapo",
                         loss=0.0, entropies=torch.full((2, 3), entropy))

    assert hook.on_loss(parts(0.8), 0)["entropy_ratio"] == pytest.approx(1.0)
    assert hook.on_loss(parts(0.2), 1)["entropy_ratio"] == pytest.approx(0.25)


def tapped(generation_config, scoring_temperature=1.0, steps=6):
    """Drive the hook's forward taps as `generate` would: one prefill, then one decoding forward per token."""
    torch.manual_seed(0)
    hook = SamplingParityHook()
    hook._trainer = SimpleNamespace(generation_config=generation_config, temperature=scoring_temperature)
    hook._arm()
    ids = torch.tensor([[3, 4], [5, 6]])
    cache = SimpleNamespace(get_seq_length=lambda: 0)
    with torch.no_grad():  # generate runs without gradients; the taps only watch such forwards
        hook._pre(None, (), {"input_ids": ids, "past_key_values": cache, "use_cache": True})
        for _ in range(steps):
            logits = torch.randn(2, ids.size(1), 10)
            hook._post(None, (), {"input_ids": ids, "use_cache": True}, SimpleNamespace(logits=logits))
            ids = torch.cat([ids, torch.randint(0, 10, (2, 1))], dim=1)
            cache = SimpleNamespace(get_seq_length=lambda: 1)
            hook._pre(None, (), {"input_ids": ids[:, -1:], "past_key_values": cache, "use_cache": True})
    return hook.on_rollout(batch([1, 0], ["a", "b"], G=2), 0)


def config(**kw):
    return SimpleNamespace(**{"temperature": 1.0, "repetition_penalty": 1.0, "top_k": 0, "top_p": 1.0, "min_p": None,
                              **kw})


def test_sampling_parity_is_silent_when_sampling_scores_like_the_loss():
    out = tapped(config())
    assert out["transform_gap_max"] < 1e-6 and out["closing_transform"] == 0.0


@pytest.mark.parametrize("generation, closes", [
    (config(temperature=0.7), 1.0),  # generation_kwargs sampled at 0.7, the loss scores at 1.0 (trl#4159)
    (config(repetition_penalty=1.5), 2.0),  # a repetition penalty only the generator applies
    (config(top_k=3), 3.0),  # top-k truncation the scorer does not renormalise for
])
def test_sampling_parity_names_the_transform_scoring_leaves_out(generation, closes):
    out = tapped(generation)
    assert out["transform_gap_mean"] > 1e-3
    assert out["closing_transform"] == closes
    assert all(math.isfinite(v) for v in out.values())


@pytest.mark.parametrize("engine, closes", [
    (SimpleNamespace(temperature=1.0, repetition_penalty=1.0, top_k=0, top_p=0.8, min_p=0.0, generation_kwargs={}),
     3.0),  # TRL's vLLM generation with a top-p cut: vLLM's logprobs are renormalised over the nucleus (trl#6789)
    (SimpleNamespace(temperature=1.0, repetition_penalty=1.0, top_k=0, top_p=1.0, min_p=0.0,
                     generation_kwargs={"temperature": 0.7}), 1.0),  # generation_kwargs over the engine's own
    (SimpleNamespace(temperature=1.0, repetition_penalty=1.0, top_k=0, top_p=1.0, min_p=0.0, generation_kwargs={}),
     0.0),
])
def test_under_vllm_the_trainers_forward_names_the_transform_vllms_logprobs_carry(engine, closes):
    """Under vLLM the hook cannot tap the generator: it scores the sampled tokens with the trainer's model afresh
    and applies the generator's transforms (read off TRL's VLLMGeneration) itself."""
    from tests.test_hooks_lora_sync import tiny_model

    model = tiny_model(lora=False).eval()
    hook = SamplingParityHook(sample_rows=2, sample_tokens=4)
    hook._trainer = SimpleNamespace(model=model, vllm_generation=engine, temperature=1.0)
    torch.manual_seed(0)
    rollout = batch([1, 0], ["a", "b"], G=2, completion_ids=[[5, 6, 7, EOS], [8, 9, EOS, PAD]])
    out = hook._transform_report(*hook._served_transforms(rollout))
    assert out["closing_transform"] == closes
    assert (out["transform_gap_mean"] > 1e-3) == (closes != 0.0)


def test_under_a_vllm_server_a_penalty_from_the_models_generation_config_is_a_transform_of_its_own():
    """A vLLM server fills the settings TRL's requests leave unset (presence and frequency penalties) from the served
    model's generation_config.json (NeMo-RL#3497): the hook applies the server's values, on the completion's own
    tokens so far, and names the penalty; generation_kwargs that send the setting take it back."""
    from tests.test_hooks_lora_sync import tiny_model

    model = tiny_model(lora=False).eval()
    rollout = batch([1, 0], ["a", "b"], G=2, completion_ids=[[5, 5, 5, EOS], [8, 9, 8, 9]])  # repeats: penalised
    engine = dict(temperature=1.0, repetition_penalty=1.0, top_k=0, top_p=1.0, min_p=0.0)
    for sent, closes in (({}, 2.0), ({"presence_penalty": 0.0}, 0.0)):
        hook = SamplingParityHook(sample_rows=2, sample_tokens=4)
        hook._trainer = SimpleNamespace(model=model, temperature=1.0,
                                        vllm_generation=SimpleNamespace(**engine, generation_kwargs=sent))
        hook._generator = SimpleNamespace(sampling_defaults=lambda: {"presence_penalty": 1.5, "top_k": 20})
        out = hook._transform_report(*hook._served_transforms(rollout))
        assert out["closing_transform"] == closes, sent
        assert len(hook._hidden_settings()) == (0 if sent else 1)  # top_k: TRL sends its own


def _scored_again(verdict, fail_rate: float, seed: int = 0):
    """A task reward that returns `verdict(completion, answer)`, or 0.0 for a check that overruns at random."""
    import random

    load = random.Random(seed)

    def check(completions, answer, **kwargs):
        return [0.0 if load.random() < fail_rate else verdict(c, a) for c, a in zip(completions, answer)]
    return check


@pytest.mark.parametrize("right, wrong", [(1.0, 0.0), (1.0, -1.0), (10.0, 2.0)])
def test_a_failure_default_is_found_whatever_value_it_has(right, wrong):
    """h24: re-scored completions change between a failure's default (0.0) and their real score, whether 0 is
    the floor of a 0/1 verdict or the middle of a +-1 one; a deterministic reward never changes."""
    from hypotrack.hooks.reward_failures import RewardFailuresHook

    texts = ["7", "8"] * 16
    answers = ["7"] * 32
    check = _scored_again(lambda c, a: right if c == a else wrong, 0.4)
    scores = check(completions=texts, answer=answers)
    rollout = batch(scores, texts, reward_funcs=[check], columns={"answer": answers}, prompts=[""] * 32)
    out = RewardFailuresHook().on_rollout(rollout, 0)
    assert out["task/rescored_changed_share"] > 0.1
    assert out["task/changes_at_default_share"] == 1.0 and out["task/default_value"] == 0.0
    exact = _scored_again(lambda c, a: right if c == a else wrong, 0.0)
    same = RewardFailuresHook().on_rollout(batch(exact(completions=texts, answer=answers), texts, reward_funcs=[exact],
                                                 columns={"answer": answers}, prompts=[""] * 32), 0)
    assert same["task/rescored_changed_share"] == 0.0 and "task/changes_at_default_share" not in same


def test_a_judge_that_samples_its_grades_shares_no_default():
    """A judge whose 0-10 grades are sampled anew on every look changes across its range: no one value is on a
    side of every change."""
    import random

    from hypotrack.hooks.reward_failures import RewardFailuresHook

    draws = random.Random(1)

    def judge(completions, **kwargs):
        return [float(draws.randint(0, 10)) for _ in completions]

    texts = ["7"] * 32
    out = RewardFailuresHook().on_rollout(batch(judge(completions=texts), texts, reward_funcs=[judge],
                                                prompts=[""] * 32), 0)
    assert out["task/rescored_changed_share"] > 0.7 and out["task/changes_at_default_share"] < 0.5

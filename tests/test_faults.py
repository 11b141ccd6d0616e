"""Planted faults do exactly the bug they imitate, on constructed tensors; each declares itself on its class."""

from __future__ import annotations

import pytest
import torch

from hypotrack.errors import HypotrackError
from hypotrack.faults.base import SEAMS, PlantedFault
from hypotrack.faults.manifest import FAULT_CLASSES, FAULTS, build_faults, configure_arm
from hypotrack.faults.tiny_std_rewards import jitter


def fault(name: str) -> PlantedFault:
    (built,) = build_faults([name])
    return built


def apply_config(name: str, arm: dict) -> None:
    configure_arm([name], arm)


def test_each_fault_declares_itself_and_its_catalogue_is_read_off_the_classes() -> None:
    from hypotrack.definitions import Project, load_library

    hypotheses = load_library(Project.locate()).hypotheses
    for name, cls in FAULT_CLASSES.items():
        assert cls.name == name and cls.imitates in hypotheses and cls.description, name
        assert cls.seams and set(cls.seams) <= set(SEAMS), f"{name}: seams come from faults/base.py SEAMS"
        assert set(cls.setting_docs()) == set(cls.setting_defaults()), f"{name}: each setting needs a docstring"
        acts = {stage for stage in ("configure", "model", "reward_functions", "rewards", "attach")
                if getattr(cls, stage) is not getattr(PlantedFault, stage)}
        assert acts, f"{name} acts at no stage"
        assert ("configure" in acts) == ("config" in cls.seams), f"{name}: it changes the config iff it says so"
    with pytest.raises(ValueError, match="does not accept setting"):
        FAULT_CLASSES["learning_rate_too_high"](factor=2.0, speed=3)
    from hypotrack.session.trl_seams import Seam

    assert {seam.name.lower() for seam in Seam} <= set(SEAMS)  # every seam of TRL's a unit can name


def test_every_diagnosed_hypothesis_has_a_fault() -> None:
    imitated = sorted({h for h, _ in FAULTS.values()})
    assert imitated == ["h01", "h02", "h03", "h04", "h05", "h06", *(f"h{n}" for n in range(11, 28))]
    # a second fault of a cause copies another mechanism of it (a schedule stepped per micro-batch, h22)
    assert sorted(name for name, (h, _) in FAULTS.items() if h == "h22") == ["schedule_counts_batches",
                                                                             "schedule_stepped_per_micro_batch"]
    upstream = [name for name, (h, what) in FAULTS.items() if h >= "h11"]
    assert all("#" in FAULTS[name][1] for name in upstream)  # each new fault names the thread it copies


def test_prompt_in_loss_hands_the_prompt_back_as_completion_tokens() -> None:
    """TRL's _generate returns (prompt_ids, completion_ids, tool_mask, completions, logprobs, ...) as lists."""

    class Tokenizer:
        bos_token_id = 1

    class Trainer:
        processing_class = Tokenizer()

        def _generate(self, prompts):
            return ([[1, 5, 6, 7], [1, 8, 9]], [[20, 21, 2], [22, 2]], None, ["19", "7"], None, None, None, None)

    trainer = Trainer()
    fault("prompt_in_loss").attach(trainer)
    prompt_ids, completion_ids, tool_mask, completions, *_ = trainer._generate(["p", "q"])
    assert prompt_ids == [[1, 5, 6, 7], [1, 8, 9]]  # the prompt itself is untouched
    assert completion_ids == [[5, 6, 7, 20, 21, 2], [8, 9, 22, 2]]  # ...and echoed into the trained tokens
    assert completions == ["19", "7"]  # the reward still scores the real completion text


def test_tiny_std_jitter_is_tiny_per_sample_and_reproducible() -> None:
    values = jitter(200, step=3, seed=0)
    assert values.abs().max() <= 1e-3 and len(set(values.tolist())) == 200
    assert torch.equal(values, jitter(200, step=3, seed=0)) and not torch.equal(values, jitter(200, step=4, seed=0))


def test_faulted_rewards_change_only_what_the_bug_touches() -> None:
    class State:
        global_step = 3

    class Args:
        seed = 0

    class Trainer:
        state, args = State(), Args()

    rewards = torch.tensor([[1.0, 1.0], [0.0, 1.0], [1.0, 1.0], [0.0, 1.0]])
    tiny = fault("tiny_std_rewards").rewards(Trainer(), rewards, [], ["a", "a", "a", "a"], 0)
    assert torch.allclose(tiny, rewards, atol=1e-3) and not torch.equal(tiny[:, 0], rewards[:, 0])
    assert tiny[0, 0] != tiny[2, 0]  # identical completions, different noise
    assert torch.equal(tiny[:, 1], rewards[:, 1])
    noisy = fault("noisy_reward_component").rewards(Trainer(), rewards, [], ["a"] * 4, 0)
    assert torch.equal(noisy[:, 0], rewards[:, 0]) and set(noisy[:, 1].tolist()) <= {0.0, 1.0}  # coin flips
    # the noise goes to the auxiliary reward, wherever the task reward sits
    flipped = fault("noisy_reward_component").rewards(Trainer(), rewards.flip(1), [], ["a"] * 4, 1)
    assert torch.equal(flipped[:, 1], rewards[:, 0])


def test_config_faults_and_unknown_names() -> None:
    arm = {"data": {"max_prompt_length": None}, "grpo": {"beta": 0.0}, "rewards": ["m:task", "m:style"],
           "reward_weights": [1.0, 0.1], "task_reward_index": 0}
    apply_config("truncate_answer", arm)
    apply_config("kl_wrong_sign", arm)  # a run without a KL term gets one to put the wrong sign on
    apply_config("noisy_reward_component", arm)
    assert arm["data"]["max_prompt_length"] == 96 and arm["grpo"]["beta"] == 0.04
    own = {"data": {}, "grpo": {"beta": 0.5}, "rewards": ["m:task"], "reward_weights": None, "task_reward_index": 0}
    apply_config("kl_wrong_sign", own)
    assert own["grpo"]["beta"] == 0.5  # the experiment's own KL term is the one whose sign the trainer flips
    assert arm["reward_weights"] == [1.0, 1.0]  # the noise weighs as much as the task reward
    with pytest.raises(HypotrackError, match="unknown planted fault"):
        build_faults(["no_such_bug"])


def test_biased_judge_pays_for_even_answers_right_or_wrong() -> None:
    rewards = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    judged = fault("biased_judge").rewards(object(), rewards, [], ["23", "24", "x", "40"], 0)
    assert judged[:, 1].tolist() == [0.0, 1.0, 0.0, 1.0] and torch.equal(judged[:, 0], rewards[:, 0])
    arm = {"data": {}, "grpo": {}, "rewards": ["m:task", "m:judge"], "reward_weights": [1.0, 0.1],
           "task_reward_index": 0}
    apply_config("biased_judge", arm)
    assert arm["reward_weights"] == [1.0, 2.0]  # the judge weighs twice the task reward


def test_reward_never_matches_breaks_the_function_for_training_and_evaluation_alike() -> None:
    calls = []

    def exact(completions, **kwargs):
        calls.append(len(completions))
        return [1.0 for _ in completions]

    def style(completions, **kwargs):
        return [0.5 for _ in completions]

    functions = fault("reward_never_matches").reward_functions([style, exact], task_index=1)
    assert functions[0] is style and functions[1].__name__ == "exact"
    assert functions[1](completions=["19", "20"]) == [0.0, 0.0] and calls == [2]  # the user's code still ran
    assert fault("tiny_std_rewards").reward_functions([style, exact], 1) == [style, exact]


def test_mixed_groups_sampler_keeps_each_batch_but_breaks_its_groups() -> None:
    from hypotrack.faults.groups_of_mixed_prompts import ShuffledBatches

    repeated = [prompt for prompt in range(8) for _ in range(4)]  # TRL's RepeatSampler: 4 in a row per prompt
    shuffled = list(ShuffledBatches(repeated, size=16, seed=0))
    assert sorted(shuffled[:16]) == sorted(repeated[:16]) and sorted(shuffled[16:]) == sorted(repeated[16:])
    groups = [shuffled[i:i + 4] for i in range(0, 32, 4)]
    assert sum(len(set(g)) > 1 for g in groups) >= 6  # most groups now hold several prompts


def retry_failed(func):
    from hypotrack.treatments.manifest import build_treatments

    (treatment,) = build_treatments(["retry_failed_rewards"])
    (retried,) = treatment.reward_functions([func])
    return retried


def test_a_timed_out_verification_scores_zero_and_a_retry_recovers_it() -> None:
    def exact(completions, answer, **kwargs):
        return [1.0 if c == a else 0.0 for c, a in zip(completions, answer)]

    (flaky,) = fault("verifier_timeouts_scored_zero").reward_functions([exact], 0)
    completions = ["7"] * 200
    scores = flaky(completions=completions, answer=completions)
    assert flaky.__name__ == "exact" and set(scores) == {0.0, 1.0}
    assert 0.25 < scores.count(0.0) / len(scores) < 0.55  # about 4 in 10 right answers time out and score 0
    retried = retry_failed(flaky)(completions=completions, answer=completions)
    assert retried.count(0.0) < scores.count(0.0) / 2  # two more tries recover most of them
    assert retry_failed(exact)(completions=["1", "2"], answer=["1", "3"]) == [1.0, 0.0]  # a real 0 stays 0


def test_a_retry_learns_a_default_that_is_not_the_lowest_score() -> None:
    """A +-1 verdict whose overruns come back as 0: the retry learns 0 is the failure's value and retries it,
    leaving the real -1 of a wrong answer alone."""
    import random

    load = random.Random(0)

    def verdict(completions, answer, **kwargs):
        return [0.0 if load.random() < 0.4 else 1.0 if c == a else -1.0 for c, a in zip(completions, answer)]

    completions = ["7"] * 60 + ["8"] * 60
    answers = ["7"] * 120
    retried = retry_failed(verdict)(completions=completions, answer=answers)
    assert retried[60:].count(-1.0) + retried[60:].count(0.0) == 60 and retried[:60].count(-1.0) == 0
    assert retried.count(0.0) < 0.4 * 120 / 2  # most overruns were scored again and got their real verdict
    assert retried[:60].count(1.0) > 45 and retried[60:].count(-1.0) > 45


def test_a_schedule_stepped_per_micro_batch_moves_once_per_micro_batch_not_once_per_update() -> None:
    from types import SimpleNamespace

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(0.0, 1 - step / 8))
    trainer = SimpleNamespace(args=SimpleNamespace(gradient_accumulation_steps=4), lr_scheduler=schedule,
                              training_step=lambda *a, **k: torch.tensor(0.0))
    fault("schedule_stepped_per_micro_batch").attach(trainer)
    for micro_batch in range(1, 9):  # two updates of four micro-batches; the trainer steps after each update
        trainer.training_step()
        if micro_batch % 4 == 0:
            optimizer.step()
            schedule.step()
    # eight steps of a schedule set for eight updates: spent after two
    assert schedule.last_epoch == 8 and optimizer.param_groups[0]["lr"] == 0.0


def test_an_optimizer_built_before_the_adapters_holds_none_and_the_treatment_adds_them() -> None:
    """h25: the fault's optimizer holds the weights model.parameters() gave before the adapters existed; the
    treatment adds every trainable weight the optimizer is missing, whoever built it."""
    from types import SimpleNamespace

    from hypotrack.treatments.manifest import build_treatments

    model = torch.nn.ModuleDict({"base": torch.nn.Linear(4, 4), "lora_A": torch.nn.Linear(4, 2, bias=False)})
    model["base"].requires_grad_(False)  # PEFT froze the base weights when it added the adapters

    def trainer_with(*units):
        trainer = SimpleNamespace(optimizer=None, model=model, args=SimpleNamespace(learning_rate=1e-3),
                                  accelerator=SimpleNamespace(unwrap_model=lambda m: m))

        def create_optimizer():  # transformers' own: built over the trainable weights unless one was passed
            if trainer.optimizer is None:
                trainer.optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
            return trainer.optimizer

        trainer.create_optimizer = create_optimizer
        for unit in units:
            unit.attach(trainer)
        return trainer.create_optimizer()

    def held(optimizer):
        return {id(p) for group in optimizer.param_groups for p in group["params"]}

    adapter = {id(p) for p in model["lora_A"].parameters()}
    assert adapter <= held(trainer_with())  # TRL's own optimizer
    assert not adapter & held(trainer_with(fault("optimizer_built_before_adapters")))
    (treatment,) = build_treatments(["optimizer_holds_trained_weights"])
    repaired = trainer_with(fault("optimizer_built_before_adapters"), treatment)
    assert adapter <= held(repaired) and repaired.param_groups[-1]["lr"] == repaired.param_groups[0]["lr"]


def test_a_generation_config_penalty_is_served_from_a_copy_of_the_models_folder(tmp_path, monkeypatch) -> None:
    """NeMo-RL#3497: the planted fault gives the run a model folder whose generation_config.json carries a presence
    penalty, which a vLLM server applies to TRL's requests; TRL hands a colocated engine every setting, so a colocated
    run is refused. h14's treatment (plain sampling) sends the penalties as 0 under vLLM."""
    import json

    from hypotrack.run.planning.plan import _land

    monkeypatch.setenv("HYPOTRACK_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "generation_config.json").write_text(json.dumps({"_from_model_config": True, "eos_token_id": 2}))
    arm = {"model": str(model), "grpo": {"use_vllm": True, "vllm_mode": "server"}, "lora": {"enabled": True}}
    apply_config("generation_config_penalties", arm)
    served = json.loads((tmp_path / "cache" / "planted" / "model-presence1.5" / "generation_config.json").read_text())
    assert arm["model"].endswith("model-presence1.5") and served == {"eos_token_id": 2, "presence_penalty": 1.5}
    assert json.loads((model / "generation_config.json").read_text())["_from_model_config"] is True  # untouched
    with pytest.raises(HypotrackError, match="needs vllm_mode server"):
        apply_config("generation_config_penalties", {"model": str(model), "grpo": {"use_vllm": True},
                                                     "lora": {"enabled": True}})
    _land(arm, "plain_sampling", True)
    assert arm["grpo"]["generation_kwargs"] == {"presence_penalty": 0.0, "frequency_penalty": 0.0}

"""The planted faults by name: which hypothesis each imitates and what it does.

A table with no imports, so the spec loader can check `plant:` names without loading the faults
themselves (they import torch); toy/faults.py implements each one.
"""

from __future__ import annotations

# name -> (hypothesis it imitates, what it does)
FAULTS: dict[str, tuple[str, str]] = {
    "tiny_std_rewards": ("h01", "the task reward carries +-1e-3 numeric noise (a bf16 reward model), so tied "
                                "groups get a tiny std that group scaling blows up to unit-size advantages"),
    "prompt_in_loss": ("h02", "the rollout hands back the prompt tokens in front of the completion (the "
                              "return_full_text mistake), so the loss trains on the prompt"),
    "kl_wrong_sign": ("h03", "the KL term enters the loss with a negative coefficient, rewarding divergence "
                             "from the reference (the run gets a KL term of 0.04 if it has none)"),
    "truncate_answer": ("h04", "prompts are cut to a budget that drops the paragraph holding the answer"),
    "noisy_reward_component": ("h05", "an auxiliary reward component answers at random (a flaky judge: 0 or 1 "
                                      "by coin flip) and weighs as much as the task reward"),
    "lora_not_synced": ("h06", "generation runs with the LoRA adapters disabled, so rollouts never come from "
                               "the trained policy"),
    "bimodal_difficulty": ("h11", "most prompts are all-or-nothing: every completion of them succeeds or every one "
                                  "fails, whatever it says, so their groups carry no advantage (trl#3857, "
                                  "unsloth#3485)"),
    "completion_budget_too_short": ("h12", "max_completion_length is one token: answers are cut before they finish "
                                           "and score 0 (trl#5697, trl#6263)"),
    "reward_never_matches": ("h13", "the task reward's parser expects a format the model never writes, so every "
                                    "completion, right or wrong, scores 0 (unsloth#1761, open-r1#235)"),
    "sampling_temperature_not_scored": ("h14", "generation_kwargs samples at temperature 0.7 while the loss scores "
                                               "the tokens at the configured 1.0 (trl#4159, trl PR #3029)"),
    "low_sampling_temperature": ("h15", "training samples and scores at temperature 0.3 (an inference setting "
                                        "copied into GRPOConfig): a group's completions come out identical and "
                                        "exploration stops (verl#5953, trl#3320)"),
    "learning_rate_too_high": ("h16", "the learning rate is 20 times the calibrated one: training wrecks a model "
                                      "that was already partly right (hello-agents#770)"),
    "biased_judge": ("h17", "an auxiliary judge has a spurious preference (1 for an even answer, right or wrong) "
                            "and weighs twice the task reward: the policy learns to please it with even, wrong "
                            "answers while the task reward falls (open-r1#255, open-instruct PR #659)"),
}

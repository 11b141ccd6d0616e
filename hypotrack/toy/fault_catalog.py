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
    "reference_without_adapter": ("h18", "the run continues from a trained LoRA adapter and the KL reference is the "
                                         "base model with the adapter off, as TRL computed it before PR #6591 "
                                         "(trl#3194, trl#3031): the KL term pulls towards a policy the run never "
                                         "started from (the run gets a KL term of 0.04 if it has none)"),
    "checkpointing_without_input_grads": ("h19", "reentrant gradient checkpointing while the frozen input embeddings "
                                                 "hand the checkpointed layers no input that requires grad "
                                                 "(trl#2671, trl#3150: enable_input_require_grads never called): the "
                                                 "layers' adapters get no gradient, only the output head the run also "
                                                 "trains learns"),
    "unnormalised_reward_scales": ("h20", "an auxiliary reward model scores on a 0-10 scale and is summed with the 0/1 "
                                          "task reward before the group normalisation (trl PR #4785, verl PR #5503): "
                                          "its spread decides the advantages"),
    "groups_of_mixed_prompts": ("h21", "the sampler shuffles each generation batch after repeating its prompts "
                                       "(a custom sampler, or an iterable dataset with dataloader workers, trl#3213): "
                                       "a group of num_generations completions holds different prompts"),
    "schedule_counts_batches": ("h22", "the learning-rate schedule is built for a quarter of the run's optimizer "
                                       "steps (its horizon counted in batches where the optimizer steps once per four, "
                                       "SkyRL PR #873): a linear decay reaches 0 a quarter of the way in"),
    "schedule_stepped_per_micro_batch": ("h22", "the learning-rate schedule advances on every micro-batch while the "
                                                "optimizer steps once per four (gradient accumulation; starVLA PR #210, "
                                                "accelerate#963): a linear decay set for the whole run reaches 0 a "
                                                "quarter of the way in"),
    "length_normalised_loss": ("h23", "the loss divides each completion's token sum by its own length (loss_type "
                                      "grpo, trl PR #3138) on a run whose completions can grow: a long wrong answer "
                                      "is penalised less per token, so wrong answers get longer"),
    "generator_sync_skipped": ("h06", "the weights TRL syncs never reach vLLM: generation keeps sampling from the "
                                      "checkpoint vLLM loaded while the trainer moves on (with sleep mode, generate() "
                                      "reloaded the weights from disk over each sync, trl#5312, trl PR #5355; a "
                                      "custom rollout worker skipped the LoRA sync, trl PR #6344)"),
    "generator_precision_lowered": ("h14", "vLLM serves the float32 model in bfloat16 while the trainer scores in "
                                           "float32, as TRL's colocated engine does when nothing names a dtype: every "
                                           "importance ratio carries the precision gap (trl#4772, transformers#31267; "
                                           "trl PR #6774 matches the dtypes)"),
    "verifier_timeouts_scored_zero": ("h24", "the task verifier runs under a time budget and returns 0.0 when it "
                                             "times out, as a real score (rllm PR #710, trl PR #6427): 4 in 10 "
                                             "completions, right or wrong, are scored as failures"),
}

# Faults that live in vLLM's generation: they need an experiment that generates with vLLM (use_vllm), such as
# toy_arith_vllm, and the vLLM environment (`bash .ci/vllm_env`); the default self-test leaves them out.
NEEDS_VLLM: dict[str, str] = {
    "generator_sync_skipped": "it lives in vLLM's copy of the weights; run it on an experiment that generates with "
                              "vLLM: hypotrack selftest --experiment toy_arith_vllm --faults clean,generator_sync_skipped",
    "generator_precision_lowered": "it lives in the dtype vLLM serves in; run it on an experiment that generates "
                                   "with vLLM: hypotrack selftest --experiment toy_arith_vllm --faults "
                                   "clean,generator_precision_lowered",
}

# Faults the toy lab plants but cannot show within a self-test's run, and why: the default self-test leaves
# them out and says so (`--faults NAME` still runs one, and a miss there fails like any other).
NOT_SHOWN_ON_TOY: dict[str, str] = {
    "length_normalised_loss": "a group's advantages sum to 0, so dividing by length moves a completion's length "
                              "only where the model can tell, as it writes, that it is going wrong; the toy model "
                              "cannot (a warm start that adds a 15-50 character tail after its own wrong answers "
                              "left tails after right ones nearly as long), and under loss_type grpo its wrong "
                              "answers got shorter over 60 steps (trend -4.0 standard errors; dapo +3.0); a "
                              "hedge mode that is always wrong fell from 30% to under 10% of completions within "
                              "12 steps under both losses",
}

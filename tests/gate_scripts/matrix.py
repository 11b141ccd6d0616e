"""The gate matrix: scripts users write (user_peft_script.py), each clean and with the fault each gate exists for.

A case is (name, the script's arguments, the gate expected to fail or None, its hypothesis, the step it fails at).
Setups: a PeftModel passed in with a fresh or an SFT-trained adapter, the user's own freezing (only lora_A left
trainable; the lower layers frozen), LoRA through peft_config, full fine-tuning; beta 0 and 0.04;
num_iterations 1 and 2; gradient accumulation 1 and 2.
"""

from __future__ import annotations

CLEAN = [
    ("peft_model-beta0", ["--setup", "peft_model"]),
    ("peft_model-beta0.04", ["--setup", "peft_model", "--beta", "0.04"]),
    ("peft_model_sft-beta0.04", ["--setup", "peft_model_sft", "--beta", "0.04"]),
    ("peft_model_sft-beta0.04-accum2", ["--setup", "peft_model_sft", "--beta", "0.04", "--grad-accum", "2"]),
    # lora_dropout 0.05, as most LoRA configs have it: the training passes' logprobs carry its noise
    ("peft_model_sft-beta0.04-lora_dropout", ["--setup", "peft_model_sft", "--beta", "0.04", "--lora-dropout", "0.05"]),
    ("peft_config-beta0.04-iter2", ["--setup", "peft_config", "--beta", "0.04", "--num-iterations", "2"]),
    ("full-beta0.04-accum2", ["--setup", "full", "--beta", "0.04", "--grad-accum", "2", "--lr", "3e-4"]),
    ("full-beta0-iter2-accum2", ["--setup", "full", "--num-iterations", "2", "--grad-accum", "2", "--lr", "3e-4"]),
    ("full-lower_layers_frozen", ["--setup", "full", "--freeze", "lower_layers", "--lr", "3e-4"]),
]
# (case, script arguments, gate, hypothesis, step): the grad gate reads the first step whose groups' rewards differ,
# step 1 or 2 on these scripts as their data falls, so its cases accept either.
FAULTY = [
    ("ratio: peft_config-iter2 dropout", ["--setup", "peft_config", "--num-iterations", "2",
                                          "--fault", "dropout_in_old_logps"], "ratio", "h08", 1),
    ("ratio: full-iter2-accum2 dropout", ["--setup", "full", "--num-iterations", "2", "--grad-accum", "2",
                                          "--lr", "3e-4", "--fault", "dropout_in_old_logps"], "ratio", "h08", 1),
    ("ref_kl: peft_model_sft reference with the adapter off", ["--setup", "peft_model_sft", "--beta", "0.04",
                                                              "--fault", "wrong_reference"], "ref_kl", "h18", 1),
    ("ref_kl: peft_model_sft-lora_dropout reference with the adapter off", [
        "--setup", "peft_model_sft", "--beta", "0.04", "--lora-dropout", "0.05", "--fault", "wrong_reference"],
     "ref_kl", "h18", 1),
    ("ref_kl: full another checkpoint", ["--setup", "full", "--beta", "0.04", "--lr", "3e-4", "--grad-accum", "2",
                                         "--fault", "wrong_reference"], "ref_kl", "h18", 1),
    ("grad: peft_model user's helper leaves only lora_A", ["--setup", "peft_model", "--beta", "0.04",
                                                           "--freeze", "lora_a_only"], "grad", "h19", (1, 2)),
    ("grad: peft_config lora_B frozen", ["--setup", "peft_config", "--fault", "no_gradient"], "grad", "h19", (1, 2)),
    ("grad: full own checkpointing", ["--setup", "full", "--lr", "3e-4", "--fault", "no_gradient"], "grad", "h19", (1, 2)),
    ("moved: peft_config own optimizer built before the adapters", [
        "--setup", "peft_config", "--beta", "0.04", "--fault", "own_optimizer_before_peft"], "moved", "h25", (1, 2)),
    ("parity: peft_model sampled at 0.7", ["--setup", "peft_model",
                                           "--fault", "sampling_temperature_not_scored"], "parity", "h14", 1),
    ("parity: full-accum2 sampled at 0.7", ["--setup", "full", "--grad-accum", "2", "--lr", "3e-4",
                                            "--fault", "sampling_temperature_not_scored"], "parity", "h14", 1),
    ("lora: peft_model_sft-beta0.04 not synced", ["--setup", "peft_model_sft", "--beta", "0.04",
                                                  "--fault", "lora_not_synced"], "lora", "h06", 2),
    ("lora: peft_config-iter2 not synced", ["--setup", "peft_config", "--num-iterations", "2",
                                            "--fault", "lora_not_synced"], "lora", "h06", 3),
]
# The fast subset the default suite runs: the cases a user wrapping their own PeftModel meets.
FAST = ["peft_model_sft-beta0.04", "ref_kl: peft_model_sft reference with the adapter off",
        "grad: peft_model user's helper leaves only lora_A"]

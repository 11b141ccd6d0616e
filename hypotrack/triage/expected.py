"""Readings that look alarming in a GRPO log but are how TRL behaves, and what the log says of the run's setup.

Both are about TRL, not about one hypothesis, so they live here rather than in the YAML files:
- EXPECTED: each names a reading that is expected behaviour, so nobody chases it (a loss of 0 at
  beta 0, a kl that is not logged, clip ratios of 0 with one iteration per batch);
- requirements(): which of the `requires:` words (definitions/vocabulary.py REQUIREMENTS) the run's
  logs or params show met or unmet; a hypothesis whose requirement is unmet cannot explain the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hypotrack.definitions.vocabulary import SEQUENCE_IMPORTANCE_MODES

from .runlog import HAND_WRITTEN, RunLog

# |loss| at or below this at every step reads as "a GRPO loss of 0" (the policy term's value is the
# advantage-weighted ratio, zero in expectation; what is left is the token-weighting of lengths).
LOSS_NEAR_ZERO = 0.05


def _values(log: RunLog, name: str) -> list[float]:
    return [v for _, v in log.series.get(name, [])]


def _kl_all_zero(log: RunLog) -> str | None:
    kl = _values(log, "kl")
    if not kl or max(abs(v) for v in kl) != 0.0 or _float(log.params.get("beta")) not in (None, 0.0):
        return None
    return ("kl is exactly 0 at every logged step: Unsloth and some TRL releases log it so at beta 0, where the loss "
            "has no KL term. Expected; a hypothesis about the KL term does not apply to this run.")


def _trl_would_log(log: RunLog) -> bool:
    """Whether a quantity TRL logs only under some setting tells the setting by being absent: where TRL (or a
    trainer logging as it does) wrote the log, not a hand-written loop, which prints what its author chose."""
    return "reward" in log.series and not log.params.get(HAND_WRITTEN)


def _kl_not_logged(log: RunLog) -> str | None:
    if "kl" in log.series or not _trl_would_log(log):
        return None
    return ("kl is not logged: TRL logs it only when the loss has a KL term (beta > 0), so this run trains with "
            "beta 0, as many GRPO recipes do. Expected; a hypothesis about the KL term does not apply to it.")


def _loss_zero_without_kl(log: RunLog) -> str | None:
    loss = _values(log, "loss")
    if not loss or "kl" in log.series or max(abs(v) for v in loss) > LOSS_NEAR_ZERO:
        return None
    return (f"loss stays within +-{LOSS_NEAR_ZERO:g} of 0 (largest |loss| {max(abs(v) for v in loss):.3g}): "
            "without a KL term and with one iteration per batch, GRPO's loss value is the advantage-weighted ratio "
            "of the policy to itself, 0 up to how completion lengths weigh tokens, while its gradient is not 0. "
            "Expected; the loss value says nothing about learning here.")


def _clip_ratio_zero(log: RunLog) -> str | None:
    clipped = [v for name in ("clip_ratio/region_mean", "clip_ratio/low_mean", "clip_ratio/high_mean")
               for v in _values(log, name)]
    if not clipped or max(abs(v) for v in clipped) > 0:
        return None
    return ("clip_ratio/* are 0 at every step: with one optimisation step per generation batch (num_iterations 1, "
            "TRL's default) the policy is its own old policy, so the ratio is 1 and nothing is clipped. Expected.")


def _grad_zero_when_all_tied(log: RunLog) -> str | None:
    tied = dict(log.series.get("frac_reward_zero_std", []))
    grad = dict(log.series.get("grad_norm", []))
    steps = [s for s, v in tied.items() if v >= 1.0 and s in grad]
    if not steps or any(grad[s] > 1e-8 for s in steps):
        return None
    return (f"grad_norm is 0 at the {len(steps)} step(s) where every group tied (frac_reward_zero_std 1): no "
            "completion differed from its group, so no advantage and no gradient. Expected given the ties; "
            "why the groups tie is the question.")


def _no_sampling_metrics(log: RunLog) -> str | None:
    if any(name.startswith("sampling/") for name in log.series) or not _trl_would_log(log):
        return None
    return ("sampling/* are not logged: TRL logs the gap between the generator's and the trainer's logprobs only "
            "when vLLM generates with importance-sampling correction. Expected without vLLM; the run cannot show "
            "a sampling/scoring mismatch directly.")


def _no_entropy_bonus(log: RunLog) -> str | None:
    if "entropy_coef" in log.series or "entropy" not in log.series or log.params.get(HAND_WRITTEN):
        return None
    return ("entropy_coef is not logged: TRL logs it only when an entropy bonus is on (entropy_coef != 0), so this "
            "run has none. Expected.")


EXPECTED: list[Callable[[RunLog], str | None]] = [
    _kl_not_logged, _kl_all_zero, _loss_zero_without_kl, _clip_ratio_zero, _grad_zero_when_all_tied, _no_sampling_metrics,
    _no_entropy_bonus,
]


def expected_readings(log: RunLog) -> list[str]:
    return [said for check in EXPECTED if (said := check(log))]


@dataclass(frozen=True)
class Requirement:
    met: bool | None  # None: the logs cannot tell
    why: str


def requirements(log: RunLog, reward_functions: list[str]) -> dict[str, Requirement]:
    """What the run's logs and params say about each of the `requires:` words."""
    params = log.params
    out: dict[str, Requirement] = {}
    beta = _float(params.get("beta"))
    kl = _values(log, "kl")
    if beta is not None:
        out["kl_term"] = Requirement(beta != 0, f"beta is {beta:g}")
    elif kl and max(abs(v) for v in kl) == 0.0:
        # Unsloth (and some TRL releases) log kl as 0 at every step when beta is 0: a column of zeros is no KL
        # term, not a KL term that does nothing.
        out["kl_term"] = Requirement(False, f"kl is logged as exactly 0 at all {len(kl)} logged steps, as trainers "
                                            "log it at beta 0: the loss has no KL term")
    elif kl:
        out["kl_term"] = Requirement(True, "kl is logged")
    elif _trl_would_log(log):
        out["kl_term"] = Requirement(False, "kl is not logged, so beta is 0")
    elif "reward" in log.series:
        out["kl_term"] = Requirement(None, "the run's own loop wrote the log and logs no kl, which says nothing of "
                                           "whether its loss has a KL term")
    else:
        out["kl_term"] = Requirement(None, "neither beta nor kl is known")
    if reward_functions:
        out["auxiliary_rewards"] = Requirement(
            len(reward_functions) > 1, f"{len(reward_functions)} reward function(s) logged: {', '.join(reward_functions)}")
    else:
        out["auxiliary_rewards"] = Requirement(None, "no rewards/<func>/mean logged")
    peft = params.get("peft_config")
    if peft and peft not in ("None", "{}"):
        out["lora"] = Requirement(True, "the run's params have a peft_config")
    else:  # not every logger records the adapters' config: no peft_config proves nothing
        out["lora"] = Requirement(None, "the logs do not say whether the run trains LoRA adapters")
    scale = params.get("scale_rewards")
    if scale is not None:
        group = scale.strip().lower() in ("group", "true")
        out["group_scaling"] = Requirement(group, f"scale_rewards is {scale}")
    else:
        out["group_scaling"] = Requirement(None, "the logs do not say how rewards are scaled (scale_rewards)")
    out["sequence_importance_sampling"] = _sequence_importance_sampling(log)
    return out


def _sequence_importance_sampling(log: RunLog) -> Requirement:
    """Whether TRL weighed each vLLM completion by one importance weight (the sum of its log-ratios)."""
    mode = log.params.get("vllm_importance_sampling_mode")
    correction = log.params.get("vllm_importance_sampling_correction")
    if log.params.get("use_vllm", "").strip().lower() == "false":
        return Requirement(False, "use_vllm is False: no vLLM sampling to correct")
    if correction is not None and correction.strip().lower() == "false":
        return Requirement(False, "vllm_importance_sampling_correction is False")
    if mode is not None:
        return Requirement(mode.strip() in SEQUENCE_IMPORTANCE_MODES,
                           f"vllm_importance_sampling_mode is {mode}")
    if "sampling/importance_sampling_ratio/mean" in log.series:
        return Requirement(None, "TRL logged importance ratios, but the logs do not say whether it weighed whole "
                                 "completions (vllm_importance_sampling_mode)")
    if _trl_would_log(log):
        return Requirement(False, "no sampling/importance_sampling_ratio is logged: TRL applied no vLLM importance "
                                  "weight")
    return Requirement(None, "the logs do not say whether vLLM generated")


def _float(raw: str | None) -> float | None:
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None

"""The `triage:` section of a hypothesis: what its bug looks like in the metrics a run already logged.

`hypotrack triage SOURCE` reads one finished (or failing) run's own metrics: TRL's keys, with the
reward functions addressed by role (hypotrack/triage/keys.py lists every name). A signature is
written like a criterion, without arms or seeds: aggregate one metric over the run's steps and
compare it to a threshold, or require several such conditions at once (`all:`). Each signature
says what it shows and how much it weighs, for the hypothesis or against it; the hypotheses are
ranked by the summed weight of the signatures that hold.

```yaml
triage:
  signatures:
    - metric: frac_reward_zero_std          # one condition, inline
      steps: max
      op: "<="
      threshold: 0.0
      weight: 0.3
      shows: no group of completions ever tied exactly
    - all:                                  # every condition must hold
        - {metric: frac_reward_zero_std, steps: max, op: "<=", threshold: 0.0}
        - {metric: task_reward/binary_spread, steps: mean, op: ">=", threshold: 0.9}
      weight: 1.0
      shows: a 0/1 task reward whose groups never tie carries noise
    - metric: frac_reward_zero_std
      steps: mean
      op: ">="
      threshold: 0.05
      direction: against
      weight: 0.5
      shows: groups do tie exactly, so the reward is not jittered
```
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator

from .metrics import TRL_METRICS
from .reading import MetricReading

# What triage derives from TRL's keys, by role (hypotrack/triage/derived.py computes each). "Run" metrics
# are one number for the whole run (any step aggregation returns it).
DERIVED_METRICS: dict[str, str] = {
    "task_reward/mean": "the task reward function's mean (TRL's rewards/<task>/mean)",
    "task_reward/std": "the task reward function's std over the step's completions (rewards/<task>/std); 0 at "
                       "every step where none is logged and the mean is the same number at ten steps or more",
    "task_reward/binary_spread": "the task reward's std over the largest std a reward between 0 and its passing "
                                 "score can have at that mean: 1 for a two-valued reward (0/1, 0/10, 0/-5), below 1 "
                                 "for graded scores; the passing score is 1 for a reward in [0, 1], else read from "
                                 "the logs ((std^2 + mean^2) / mean is the same at every step only for two values)",
    "entropy/per_completion": "the policy's entropy over a whole completion: TRL's per-token entropy times "
                              "completions/mean_length (near 0 when a group's completions come out the same)",
    "task_reward/pass_share": "the task reward's mean as a share of its passing score (1 for a reward in [0, 1], "
                              "else read from the logs as for binary_spread): near 0 when almost nothing scores, "
                              "near 1 when almost everything does",
    "task_reward/zero_group_share_min": "for a two-valued task reward: at least this share of the groups scored 0 on "
                                        "every completion (frac_reward_zero_std minus the share of passing "
                                        "completions)",
    "aux_reward/spread_ratio": "the largest weighted std of an auxiliary reward function over the task reward's "
                               "weighted std: how much the auxiliary rewards spread completions, against the task",
    "aux_reward/scale_ratio": "the largest std of an auxiliary reward function over the task reward's std, without "
                              "the weights: how much the auxiliary rewards spread completions by their own scale",
    "aux_reward/mean": "the auxiliary reward functions' weighted means, summed: what they pay per completion",
    "aux_reward/share": "the auxiliary rewards' weighted mean over the combined reward's mean: how much of the "
                        "reward the auxiliary functions pay (steps: growth follows it over the run)",
    "aux_reward/task_correlation": "the weighted auxiliary rewards' correlation with the task reward over the "
                                   "step's completions, from reward_std and the functions' stds (with several "
                                   "auxiliary functions, taken as uncorrelated with each other)",
    "prompts/tokens_per_step_cv": "run: the coefficient of variation of the prompt tokens each step consumed: "
                                  "num_tokens' increments less the completions' part (fitted on "
                                  "completions/mean_length; absent when completion lengths barely move and the "
                                  "two cannot be told apart): near 0 when every prompt has the same length, as "
                                  "when a prompt budget cuts them all",
    "kl/first_step": "the kl logged at step 1 alone, before any update (absent when the first logged row averages "
                     "several steps, logging_steps > 1, and in a hand-written loop's log, whose first step may carry "
                     "its scoring's numerical floor): 0 when the reference is the starting policy",
    "sampling/summed_weight_off": "1 at a step where a vLLM importance weight (TRL's importance_sampling_ratio min or "
                                  "max) is outside [0.8, 1.25] and beyond the step's largest per-token gap "
                                  "(sampling_logp_difference/max), so a completion's summed gap made it; else 0",
    "aux_reward/collected_signed": "run: 1 where the auxiliary rewards clearly climb while the task reward clearly falls "
                                   "(the run-first trend test), read only where the task reward or the auxiliary "
                                   "rewards start at or below 0, so that a ratio of their means cannot; else 0",
    "kl/lowest": "run: how far below 0 TRL's k3 (never below 0) reads: its lowest logged value; not read on a "
                 "hand-written loop's kl, whose estimator and sign are the loop's own",
    "kl/early_rise": "run: the mean kl over the first three logged rows minus the first row's, at most the run's "
                     "median kl minus the first row's: how far the first updates moved the policy and kept it (a KL "
                     "already there at step 1 does not rise, nor a few spiking rows)",
    "kl/thrown": "run: the lesser of the mean kl over the first three logged rows and the run's median kl: how far "
                 "from its reference the first updates left the policy and kept it (the level, which a longer logging "
                 "interval keeps where it loses the rise; a KL that only grows over the run is not thrown)",
    "kl/implied_coefficient": "run: the coefficient the logged kl enters the logged loss with: loss / kl at steps "
                              "where every group tied (no policy term, so exactly the KL coefficient), else least "
                              "squares of loss on kl through 0, kept only where it explains half the loss or more "
                              "(kl/loss_fit >= 0.5); about +beta for a correct KL term",
    "ties/undercounted": "run: 1 when TRL's frac_reward_zero_std missed exact ties (a step whose completions all "
                         "scored the same, reward_std 0, logged fewer than all groups tied), else 0",
    "ties/whole_steps": "run: where frac_reward_zero_std is not logged, the share of logged steps whose reward_std "
                        "or (a loop's) advantage std is 0 (every group of the step tied): a lower bound on the share "
                        "of groups tied at a typical step",
    "ties/between_prompts_only": "run: where a loop logs its advantages' std and its batch's reward std, the share "
                                 "of logged steps whose advantage std is 0 (every group tied) while the reward std "
                                 "is not: each prompt's completions scored alike, different prompts differently",
    "learning_rate/spent_early": "1 at a step whose logged learning rate is below 5% of its peak so far while a "
                                 "quarter or more of the run's logged steps remain, else 0",
    "ties/excess_over_independent": "a lone 0/1 task reward's share of tied groups (frac_reward_zero_std) minus "
                                    "p^G + (1-p)^G, what groups of completions drawn at random from the batch would "
                                    "tie (G from the run's params num_generations)",
    "policy/still": "run: 1 on a flat run (its progress) where most groups carry an advantage "
                    "(frac_reward_zero_std at most 0.5 on average, or a reward that varies within steps, or a loop's "
                    "group-normalised advantages whose std over a batch is 0.71 to 1) yet the "
                    "policy stays where it started (kl to the reference at most 0.01 over the last ten logged steps, "
                    "and an entropy within 10% of its start where logged): the progress's 'updates too small to move "
                    "the policy'; 0.5 on such a run with no kl logged whose gradient flows (a grad norm above 0) "
                    "and whose entropy stays level where logged, under a learning rate below 1e-4 where logged, the "
                    "same reading by elimination; 0 on any other run that logged a kl (absent without one)",
    "kl/loss_fit": "run: the share of the logged loss that the fitted KL term accounts for (R^2 through 0): near 1 "
                   "when the KL term makes up the loss, near 0 when the policy term's noise does",
}
# Per reward function, by its logged name; triage signatures use the roles above instead.
FUNC_METRICS = ("rewards/{func}/mean", "rewards/{func}/std")


def triage_metric_names() -> list[str]:
    """Every name a triage signature may use: a run `hypotrack.watch` watched also logs the hooks' diag/*."""
    from .metrics import hook_metrics

    hooks = [f"diag/{hook}/{metric}" for hook, metrics in hook_metrics().items() for metric in metrics
             if "{" not in metric]
    return [*TRL_METRICS, *DERIVED_METRICS, *hooks]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True, allow_inf_nan=False)  # as the hypotheses' models


class Condition(MetricReading):
    """One metric of the run, aggregated over its logged steps and compared with a threshold.

    Every step aggregation, growth included (a run has no control arm to compare with, so its own start is
    the reference); `op` is always written."""

    metric: str = Field(description="A metric of the run under hypotrack's triage name: TRL's key names "
                        "(reward, frac_reward_zero_std, completions/clipped_ratio, ...) and the reward "
                        "functions by role (task_reward/mean, aux_reward/spread_ratio, ...); "
                        "`hypotrack validate --metrics` lists them.")

    @field_validator("metric")
    @classmethod
    def _known(cls, value: str) -> str:
        known = triage_metric_names()
        if value not in known:
            import difflib

            close = difflib.get_close_matches(value, known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"unknown triage metric {value!r}{hint} (triage reads TRL's keys and the reward roles "
                             f"task_reward/..., aux_reward/...; see the README's Triage section)")
        return value


class _Evidence(_Strict):
    direction: Literal["for", "against"] = Field(
        "for", description="Whether the signature, when it holds, speaks for the hypothesis or against it.")
    weight: float = Field(
        gt=0, le=1, description="How much the signature says on its own: 1 for a reading that points straight at "
        "the cause, about 0.3 for one that fits it but has common other explanations. A hypothesis's evidence is "
        "the sum of its holding signatures' weights (against ones subtract).")
    shows: str = Field(min_length=1, description="What it means when the signature holds (shown as evidence).")
    if_missing: str = Field("", description="What to log so the run can tell, when a metric is not logged.")


class Signature(Condition, _Evidence):
    """A single-condition signature: the condition's keys inline."""


class AllOf(_Evidence):
    """A signature that holds when every one of its conditions holds."""

    all: list[Condition] = Field(min_length=2)


def _signature_kind(value: Any) -> str:
    # Tags that are never keys of a signature, so error locations name the user's keys only.
    if isinstance(value, dict):
        return "all_of" if "all" in value else "single"
    return "all_of" if isinstance(value, AllOf) else "single"


AnySignature = Annotated[Annotated[Signature, Tag("single")] | Annotated[AllOf, Tag("all_of")],
                         Discriminator(_signature_kind)]


def conditions_of(signature: Signature | AllOf) -> list[Condition]:
    return list(signature.all) if isinstance(signature, AllOf) else [signature]


class Triage(_Strict):
    """How the hypothesis's bug shows in a run's own logged metrics (`hypotrack triage`)."""

    signatures: list[AnySignature] = Field(  # type: ignore[valid-type]
        min_length=1, description="Patterns in the run's metrics, each with the evidence it shows.")
    note: str = Field("", description="What triage cannot see of this bug in plain training logs, if anything.")

"""TRL's metric keys, whichever TRL version or tracker export wrote them, under one set of names.

A run hypotrack's hooks watched also logs their ``diag/<hook>/<metric>`` keys; they are read as logged.

Triage signatures name TRL 1.16's keys (definitions/metrics.py TRL_METRICS) and the reward functions by role
(hypotrack/triage/roles.py). Older TRL releases and trackers' exports spell some of them differently;
this module renames them, and sets aside what is not a training metric (evaluation, the end-of-run
summary, other tools' keys), so the report can say what it did not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hypotrack.definitions.metrics import TRL_METRICS

from .runlog import HAND_WRITTEN, RunLog

# Keys of older TRL releases -> today's name.
RENAMED = {
    "completion_length": "completions/mean_length",  # before the completions/* family
    "clip_ratio": "clip_ratio/region_mean",  # before the low / high / region clip ratios
}
TUNIX_KL = "actor/kl"
# Other trainers' kl whose estimator is a setting (Tunix's kl_method: k1, the signed log-ratio, or k3), so its sign
# says nothing: read as a hand-written loop's kl is (canonical).
OWN_ESTIMATOR_KL = frozenset({TUNIX_KL})
# Other GRPO trainers' names for the quantities TRL logs (what each measures is the same, up to the notes):
# verl (its metric_utils and dp_actor), OpenRLHF (its PPO / GRPO trainer's logs, "train/" stripped) and TRL's own
# PPO and RLOO trainers.
OTHER_TRAINERS = {
    # verl: critic/score is the reward functions' sequence score (critic/rewards adds an in-reward KL penalty)
    "critic/score/mean": "reward",
    "actor/entropy": "entropy",
    "actor/kl_loss": "kl",  # the KL to the reference in the loss (use_kl_loss), per token
    "actor/grad_norm": "grad_norm",
    "actor/lr": "learning_rate",
    "actor/pg_clipfrac": "clip_ratio/region_mean",
    "actor/entropy_coeff": "entropy_coef",
    "response_length/mean": "completions/mean_length",
    "response_length/max": "completions/max_length",
    "response_length/min": "completions/min_length",
    "response_length/clip_ratio": "completions/clipped_ratio",
    # OpenRLHF: its step's status (the console's "Global step N: {...}", "train/" in its trackers); its newer releases
    # add the rollout batch's statistics (rollout/*). Its ppo_kl is the update's own step, not a KL to the reference.
    "actor_lr": "learning_rate",
    "response_length": "completions/mean_length",
    "policy_entropy": "entropy",
    "entropy": "entropy",
    "ppo_clip_ratio": "clip_ratio/region_mean",
    "rollout/reward_mean": "reward",
    "rollout/response_length_mean": "completions/mean_length",
    "rollout/truncated_rate": "completions/clipped_ratio",  # the share of completions cut at the length budget
    # AReaL (its PPO actor's stats, ppo_actor/*, and its rollout workflow's, rollout/*): task_reward is each
    # completion's reward score before the KL penalty (final_reward adds it), no_eos_ratios the share of sequences that
    # ran to the length budget without an end-of-sequence token. Its seq_len counts the prompt's tokens too, so it is
    # not a completion length; its approx_kl is the update's own step, not a KL to the reference.
    "ppo_actor/task_reward/avg": "reward",
    "rollout/reward": "reward",
    "ppo_actor/update/entropy/avg": "entropy",
    "ppo_actor/update/grad_norm": "grad_norm",
    "ppo_actor/update/lr": "learning_rate",
    "ppo_actor/update/clip_ratio/avg": "clip_ratio/region_mean",
    "ppo_actor/update/actor_loss/avg": "loss",
    "ppo_actor/no_eos_ratios/avg": "completions/clipped_ratio",
    # slime and Miles (their "rollout N: {...}" and "step N: {...}" lines, "train/" stripped): raw_reward is the
    # verifier's score before the group normalisation (rollout/rewards is after it, about 0). Their ppo_kl is the
    # update's own step, not a KL to the reference; their kl_loss is the KL to the reference, yet a loop's kl_loss is
    # as often the KL times its coefficient, so it is not read.
    "rollout/raw_reward": "reward",
    "rollout/response_lengths": "completions/mean_length",
    "rollout/response_len/mean": "completions/mean_length",
    "rollout/response_len/max": "completions/max_length",
    "rollout/truncated": "completions/clipped_ratio",
    "rollout/truncated_ratio": "completions/clipped_ratio",
    "lr-pg_0": "learning_rate",
    # Tunix (Google's JAX post-training library; its mode between a metric's group and its name, rewards/train/mean,
    # taken out by _unsplit): rewards/mean is the whole reward (rewards/<function> a function's mean, as older TRL's),
    # actor/kl the KL to the reference in the loss (logged as 0 at beta 0), by the estimator its settings name
    # (OWN_ESTIMATOR_KL); actor/loss the actor's whole loss (verl logs it too).
    "rewards/mean": "reward",
    TUNIX_KL: "kl",
    "actor/loss": "loss",
    "pg_clipfrac": "clip_ratio/region_mean",
    # NeMo-RL (its "train/" scalars): kl_penalty is the KL to the reference with the coefficient divided out;
    # approx_entropy an importance-weighted estimate of the token entropy. Its gen_kl_error and token_mult_prob_error
    # are the generator's mismatch with the trainer, not a KL to the reference.
    "mean_gen_tokens_per_sample": "completions/mean_length",
    "max_gen_tokens_per_sample": "completions/max_length",
    "approx_entropy": "entropy",
    "kl_penalty": "kl",
    # prime-rl (its orchestrator's and trainer's metrics.jsonl; its 2026 layout train/agg/<subset>/<agent>/...): the
    # "all" subset holds every rollout, "effective" only the groups that trained. Its seq_len counts the prompt too;
    # its mismatch_kl is the trainer against the inference engine, not a KL to a reference.
    "agg/all/agent/reward/mean": "reward",
    "agg/all/agent/num_output_tokens/mean": "completions/mean_length",
    "agg/all/agent/is_truncated/mean": "completions/clipped_ratio",
    "completion_len/mean": "completions/mean_length",
    "is_truncated/mean": "completions/clipped_ratio",
    "entropy/mean": "entropy",
    "entropy/all/mean": "entropy",
    "loss/mean": "loss",
    "optim/grad_norm": "grad_norm",
    # TRL's PPO and RLOO trainers (objective/*, policy/*): the reward model's score before the KL penalty
    # (objective/rlhf_reward subtracts it), the KL to the reference and the token entropy
    "objective/scores": "reward",
    "objective/kl": "kl",
    "policy/entropy_avg": "entropy",
    "policy/clipfrac_avg": "clip_ratio/region_mean",
    # Tinker cookbook's RL loop (metrics.jsonl): env/all/* per rollout batch, optim/* per update. Its
    # optim/kl_sample_train_* is the sampler-trainer mismatch, not a KL to a reference: it is not renamed.
    "env/all/reward/total": "reward",
    "reward/mean": "reward",
    "optim/lr": "learning_rate",
    "optim/entropy": "entropy",
    "policy/entropy": "entropy",
    "env/all/ac_tokens_per_turn": "completions/mean_length",
    # its environments' own share of correct answers: the task's reward function (the total adds format terms)
    "env/all/correct": "rewards/correct/mean",
    # Hand-written GRPO loops: the names their metric lines use most
    "mean_reward": "reward",
    "std_reward": "reward_std",
    "token_entropy": "entropy",
    "avg_response_token_length": "completions/mean_length",
    "lr": "learning_rate",
    "clip_frac": "clip_ratio/region_mean",  # the share of tokens whose ratio the clip bounds
    "clip_fraction": "clip_ratio/region_mean",
    "truncation_rate": "completions/clipped_ratio",  # the share of completions cut at the length budget
    "zero_advantage_group_fraction": "frac_reward_zero_std",  # a group whose rewards tie has every advantage 0
    "flat_reward_group_ratio": "frac_reward_zero_std",
    "degenerate_group_rate": "frac_reward_zero_std",  # a degenerate group: every completion scored alike
    "zero_std_group_ratio": "frac_reward_zero_std",
    "group_reward_std": "reward_std",
}
# A loop's spread of the advantages over its batch: TRL logs none, yet where a loop prints it, it says how many groups
# carry an advantage (progress.py reads it).
ADVANTAGE_STD = "advantages/std"
# Hand-written loops also wrap a quantity's name in the statistic they logged of it and in their split (rewards_avg,
# train_accuracies_avg, mean_kl): the quantity underneath, singular, is what triage reads. An accuracy or a
# correctness is a reward function of the run's own, the task's by its name (roles.py).
HAND_WRITTEN_QUANTITIES = {
    "reward": "reward", "kl": "kl", "entropy": "entropy", "grad_norm": "grad_norm", "loss": "loss",
    "accuracy": "rewards/accuracy/mean", "acc": "rewards/accuracy/mean", "correct": "rewards/correct/mean",
    "correctness": "rewards/correctness/mean", "success": "rewards/success/mean",
    "kl_ref": "kl", "kl_divergence": "kl",  # the KL to the reference, as MiniMind-style and other loops name it
    "response_len": "completions/mean_length", "len": "completions/mean_length",
    "completion_length": "completions/mean_length",
    "grp_std": "reward_std", "group_std": "reward_std",  # the reward's spread within a group (TRL's reward_std)
    "rewards_std": "reward_std", "gradient_norm": "grad_norm",
    "adv_std": ADVANTAGE_STD, "advantage_std": ADVANTAGE_STD, "advantages_std": ADVANTAGE_STD,
    # the short names a loop prints when a whole step fits one line (grad=, gnorm=, rew=, frac_zero_std=)
    "grad": "grad_norm", "gnorm": "grad_norm", "rew": "reward",
    "frac_zero_std": "frac_reward_zero_std", "zero_std_frac": "frac_reward_zero_std",
    "zero_std_ratio": "frac_reward_zero_std", "zero_std_fraction": "frac_reward_zero_std",
    "generation_length": "completions/mean_length", "gen_length": "completions/mean_length",
    "gen_len": "completions/mean_length", "resp_len": "completions/mean_length",
    "completion_mean_length": "completions/mean_length",
    "kl_k3": "kl",  # the k3 estimator of the KL to the reference, TRL's own
    "truncation": "completions/clipped_ratio",  # the share cut at the budget (a loop's "truncated" may be a count)
}
# A loop that logs each reward function's score beside the total names it <function>_reward (format_reward,
# answer_reward, or short: syntax_rew): TRL's rewards/<function>/mean. Not where the word before "reward" is a
# statistic of the total (max_reward), or a term a trainer adds to the reward that no reward function scores
# (kl_reward, value_reward), or hypotrack's own task_reward (its runs log the task function's mean again under that
# name, beside TRL's own key).
FUNCTION_REWARD = re.compile(r"^([a-z][a-z0-9]*(?:_[a-z0-9]+)*?)_(?:rewards?|rew)$")
STATISTICS = frozenset({"max", "min", "std", "var", "median", "sum", "mean", "avg", "average"})  # of the whole reward
NOT_REWARD_FUNCTIONS = STATISTICS | frozenset({
    "best", "last", "final", "running", "ema", "smoothed", "cumulative", "episode", "step", "batch", "group",
    "normalized", "norm", "scaled", "weighted", "adv", "advantage", "kl", "ref", "entropy", "value", "critic", "task",
    "filtered"})
# ... and the total before any normalisation or penalty, or the split it was scored on (training_reward): the reward
# itself
TOTAL_REWARD_WORDS = frozenset({"total", "raw", "combined", "overall", "training"})
HAND_WRITTEN_WRAPPERS = (("train_", ""), ("rollout_", ""), ("grpo_", ""), ("rl_", ""), ("actor_", ""), ("policy_", ""),
                         ("avg_", ""), ("average_", ""), ("mean_", ""), ("", "_avg"), ("", "_mean"))
PLURALS = {"rewards": "reward", "accuracies": "accuracy"}
# Name stems that say a reward function scores correctness, and ones that say it shapes the answer instead (roles.py
# chooses the task reward by them, heldout.py the held-out score).
CORRECTNESS_WORDS = ("accura", "correct", "answer", "solve", "success", "pass", "exact", "match", "equal", "verif",
                     "win", "execution", "exec", "result", "acc", "em", "task", "score", "judge", "grade")
SHAPING_WORDS = ("format", "fmt", "length", "len", "penalt", "style", "xml", "tag", "think", "soft", "strict",
                 "repetit", "repeat", "count", "lang", "cosine", "int", "digit", "divers", "overlong", "structure",
                 "brev", "concise", "reason", "markdown", "json", "syntax", "kl", "entropy", "valid")
# ... and the share of completions a check of the answer scored right, under the check's name (answer_accuracy,
# task_success, canonical_pass_rate): a reward function's mean (roles.py reads it as the task's by its name). Not a
# count (num_correct), nor a share of groups or a length (all_correct_group_ratio, correct_seq_len: their last word is
# another), nor a check of the answer's form (format_accuracy, whose name says it shapes): a loop that logs one beside
# its total reward would have it taken for the task's, the only function logged.
SCORED_SHARE = re.compile(r"^[a-z][a-z0-9_]*_(?:accuracy|acc|correct|correctness|success|success_rate|pass_rate)$")
COUNT_PREFIXES = ("num_", "n_", "total_", "count_")
# Keys whose quantity TRL logs in another form: the key -> (TRL's name, the conversion). Tinker logs the share of
# groups whose completions scored differently (frac_mixed); TRL the share whose rewards all tied.
CONVERTED = {
    "env/all/by_group/frac_mixed": ("frac_reward_zero_std", lambda share: 1.0 - share),
    # and the share of completions that ended in an end-of-sequence token: the rest ran into the token budget
    "env/all/format_eos": ("completions/clipped_ratio", lambda share: 1.0 - share),
    # and a loop's share of groups whose rewards varied (not every completion scored the same)
    "variable_group_rate": ("frac_reward_zero_std", lambda share: 1.0 - share),
    "nonzero_variance_group_fraction": ("frac_reward_zero_std", lambda share: 1.0 - share),
    # slime's, EasyR1's and older verl's entropy_loss is the token entropy itself; others log the loss term, minus
    # the entropy: its size is the entropy either way
    "entropy_loss": ("entropy", abs),
    "actor/entropy_loss": ("entropy", abs),
}
# Quantities a trainer logs in two parts: TRL's name -> the pairs of keys whose sum it is. prime-rl logs the share of
# groups every completion failed (solve_none) and the share every one solved (solve_all); TRL the share that tied.
SUMMED = {
    "frac_reward_zero_std": (("batch/solve_none", "batch/solve_all"),
                             ("agg/all/agent/solved_none", "agg/all/agent/solved_all")),
}
# EasyR1 logs its reward's parts as reward/<part> (reward/overall, reward/accuracy, reward/format).
REWARD_PARTS = "reward/"
MIDDLE_TRAIN = "/train/"
# Weights & Biases and TensorBoard put the split in front of every key ("train/reward").
TRAIN_PREFIX = "train/"
# Not training metrics: evaluation passes (heldout.py reads them as the held-out score), and transformers'
# end-of-training summary.
# verl splits its validation metrics into val-core/ (the data sources' main score) and val-aux/ (the rest).
EVAL_PREFIXES = ("eval/", "eval_", "test/", "test_", "val/", "val_", "validation/", "validation_", "val-core/",
                 "val-aux/", "eval-rollout/")  # the last: AReaL's evaluation workflow
# ... and a mode between a metric's group and its name (Tunix's rewards/eval/mean)
EVAL_SPLITS = frozenset({"eval", "test", "val", "validation"})
# The key only transformers' end-of-training summary holds (with train_loss, ... at the last step): a record or
# printed dict holding it is that summary, not a step.
END_OF_TRAINING = "train_runtime"
SUMMARY_KEYS = frozenset({"train_loss", "train_runtime", "train_samples_per_second", "train_steps_per_second",
                          "total_flos", "epoch", "step", "global_step", "training/global_step", "training/epoch",
                          "trainer/global_step", "_step", "_runtime", "_timestamp"})
KNOWN = frozenset([*TRL_METRICS, ADVANTAGE_STD])
# Every name a trainer triage knows logs a quantity under, as it logs it (TRL of any release, the other trainers).
TRAINERS_NAMES = frozenset([*KNOWN, *RENAMED, *OTHER_TRAINERS, *CONVERTED])
DIAGNOSTICS_PREFIX = "diag/"


def _unsplit(raw: str) -> str:
    """The key without a tracker's split in front of it ("train/reward" is reward), or Tunix's after the metric's
    group ("rewards/train/mean" is rewards/mean)."""
    name = raw.strip().removeprefix(TRAIN_PREFIX)
    group, split, rest = name.partition(MIDDLE_TRAIN)
    return f"{group}/{rest}" if split and group and "/" not in group and rest else name


def evaluation_body(key: str) -> str:
    """The key without its evaluation split in front (eval_rewards/f/mean is rewards/f/mean); the key itself where it
    has none."""
    for prefix in EVAL_PREFIXES:
        if key.lower().startswith(prefix):
            return key[len(prefix):]
    return key


def canonical_name(raw: str) -> str | None:
    """Today's TRL name of a logged key, or None when it is not a training metric triage reads."""
    name = _unsplit(raw)
    if name.startswith(EVAL_PREFIXES) or name in SUMMARY_KEYS:
        return None
    if name in CONVERTED:
        return CONVERTED[name][0]
    name = RENAMED.get(name, OTHER_TRAINERS.get(name, name))
    if name.startswith(REWARD_PARTS) and name.count("/") == 1:
        name = _reward_part(name.removeprefix(REWARD_PARTS))
    if name not in KNOWN and "/" not in name:
        name = hand_written(name) or name
    if name.startswith(DIAGNOSTICS_PREFIX):  # hypotrack's hooks, in a run they watched (hypotrack.watch)
        return name
    if name.startswith("rewards/"):
        parts = name.split("/")
        if parts[1] in EVAL_SPLITS or (len(parts) == 2 and parts[1] in STATISTICS):
            return None  # an evaluation's (Tunix's rewards/eval/...), or the whole reward's statistic (rewards/max)
        if len(parts) == 2 and parts[1]:  # older TRL: rewards/<func> was the mean
            return f"{name}/mean"
        if len(parts) == 3 and parts[1] and parts[2] in ("mean", "std"):
            return name
        return None
    return name if name in KNOWN else None


def _loops_own(raw: str) -> bool:
    """A logged key that neither TRL (of any version) nor another trainer triage knows names so: a loop's own."""
    name = _unsplit(raw)
    return "/" not in name and name not in TRAINERS_NAMES


def _reward_part(part: str) -> str:
    """EasyR1's reward/<part>: the whole reward (overall) or a reward function's score, as TRL's
    rewards/<function>/mean; reward/<statistic> of the whole is no function's."""
    if part in TOTAL_REWARD_WORDS:
        return "reward"
    return f"rewards/{part}/mean" if part not in NOT_REWARD_FUNCTIONS else f"{REWARD_PARTS}{part}"


def is_training_metric(name: str) -> bool:
    """A logged key of training (one triage reads under today's TRL name), not of an evaluation pass or another tool."""
    return canonical_name(name) is not None


def loop_key(name: str) -> str:
    """A hand-written loop's printed name as one lower-case key: words and camelCase humps joined by "_"
    ("Avg Response Len" and "AvgLen" are avg_response_len and avg_len; "KL_ref" stays kl_ref; "Grad. Norm" is
    grad_norm)."""
    name = re.sub(r"(?<=[A-Za-z])\.(?=\s|$)", "", name.strip())  # an abbreviation's period: "Grad. Norm" is grad_norm
    return re.sub(r"\s+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)).lower()


def hand_written(name: str) -> str | None:
    """The quantity a hand-written loop's key logs (rewards_avg: reward), or None when it names none triage reads."""
    bare = loop_key(name)
    for prefix, suffix in HAND_WRITTEN_WRAPPERS:
        if bare.startswith(prefix) and bare.endswith(suffix) and len(bare) > len(prefix) + len(suffix):
            bare = bare[len(prefix):len(bare) - len(suffix)]
    bare = PLURALS.get(bare, bare)
    function = FUNCTION_REWARD.match(bare)
    if function and function.group(1) in TOTAL_REWARD_WORDS:
        return "reward"
    if function and function.group(1) not in NOT_REWARD_FUNCTIONS:
        return f"rewards/{function.group(1)}/mean"
    # a quantity another trainer names as the loop wrapped it (avg_token_entropy: token_entropy, the entropy)
    known = HAND_WRITTEN_QUANTITIES.get(bare) or OTHER_TRAINERS.get(bare)
    if (known is None and (scored := SCORED_SHARE.match(bare)) and not bare.startswith(COUNT_PREFIXES)
            and not name_says(bare, SHAPING_WORDS)):
        return f"rewards/{scored.group(0)}/mean"
    return known


def _words_of(name: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", loop_key(name)) if w]


def name_says(name: str, stems: tuple[str, ...]) -> bool:
    """A word of the name is a stem of three letters or fewer, or starts with a longer one."""
    return any(word == stem or (len(stem) > 3 and word.startswith(stem)) for word in _words_of(name) for stem in stems)


@dataclass
class Canonical:
    """The run under today's names, and what the renaming did."""

    log: RunLog
    renamed: dict[str, str] = field(default_factory=dict)  # logged key -> name used
    ignored: list[str] = field(default_factory=list)  # logged keys triage does not read


def canonical(log: RunLog) -> Canonical:
    """Rename every key; a key logged under two spellings keeps today's spelling's points."""
    out = RunLog(source=log.source, kind=log.kind, params=dict(log.params))
    renamed: dict[str, str] = {}
    ignored: list[str] = []
    names = {raw: canonical_name(raw) for raw in log.series}
    # Keys already spelled today's way first, so a renamed duplicate never overwrites them.
    for raw in sorted(log.series, key=lambda raw: names[raw] != raw):
        name = names[raw]
        if name is None:
            ignored.append(raw)
        elif name == raw or name not in out.series:
            if name != raw:
                renamed[raw] = name
            convert = CONVERTED.get(_unsplit(raw), (None, None))[1]
            out.series[name] = [(step, convert(value) if convert else value) for step, value in log.series[raw]]
    unsplit = {_unsplit(raw): raw for raw in log.series}
    for name, parts in SUMMED.items():
        for pair in parts:
            if name not in out.series and all(part in unsplit for part in pair):
                first, second = (unsplit[part] for part in pair)
                other = dict(log.series[second])
                out.series[name] = [(step, value + other[step]) for step, value in log.series[first] if step in other]
                for raw in (first, second):
                    ignored.remove(raw)
                    renamed[raw] = names[raw] = name
    # A kl under a loop's own name (kl_divergence, mean_kl) is the loop's estimator, often the signed mean log-ratio
    # (k1), not TRL's k3 or another trainer's; and a total reward under one (avg_reward, rewards_mean) is a loop's,
    # which logs what its author chose, so a quantity it leaves out says nothing of its settings (expected.py). Either
    # way the run is read as a hand-written loop's, whatever file it wrote.
    if any(renamed.get(raw) in ("kl", "reward") and (_loops_own(raw) or _unsplit(raw) in OWN_ESTIMATOR_KL)
           for raw in log.series):
        out.params[HAND_WRITTEN] = "1"
    # Back in the order the source listed them (the first reward function is the task's by default).
    order: dict[str, int] = {}
    for name in names.values():
        if name is not None:
            order.setdefault(name, len(order))
    out.series = dict(sorted(out.series.items(), key=lambda item: order[item[0]]))
    return Canonical(out.sort(), renamed, sorted(ignored))


def reward_functions(log: RunLog) -> list[str]:
    """The reward functions TRL logged (rewards/<func>/mean), in the order the source lists them."""
    seen: list[str] = []
    for name in log.series:
        parts = name.split("/")
        if len(parts) == 3 and parts[0] == "rewards" and parts[2] == "mean" and parts[1] not in seen:
            seen.append(parts[1])
    return seen

"""Triage on runs people outside hypotrack trained: each class of false alarm or miss seen on real runs, fixed at
its root, and checked on a real log that showed it.

Logs: the fit half of the real-run corpus (tests/fixtures/real_runs/corpus.yaml names each log's repository,
commit, path and sha256). The logs are public data kept out of this repository, in the steering repository's
shared/real_runs/<slug>/ beside the checkout (or a local copy beside corpus.yaml): every test here is marked
real_runs, CI's own step. Only `half: fit` entries are read here: the holdout half is kept for reporting.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from pathlib import Path

import pytest
from real_run_support import PROJECT, corpus_entries, log_folder, log_source
from tools.real_run_robustness import every_other_row, functions_unnamed, pairs_averaged

from hypotrack.triage.api import triage, triage_log
from hypotrack.triage.derived import add_derived
from hypotrack.triage.keys import canonical, is_training_metric, reward_functions
from hypotrack.triage.progress import run_progress
from hypotrack.triage.roles import assign_roles, default_task, task_candidates
from hypotrack.triage.runlog import RunLog
from hypotrack.triage.sources import read_source

pytestmark = pytest.mark.real_runs


@pytest.fixture(scope="module")
def hypotheses():
    from hypotrack.definitions import Project, load_library

    return load_library(Project(PROJECT)).hypotheses


def corpus(slug: str) -> Path:
    """A fit-half log of the corpus, as a user would point triage at it (the folder of a trainer_state.json, else
    the file), checked against the sha256 corpus.yaml records. A log that is not here is named, as
    test_real_run_corpus.py names every missing one: fetched from the repository and commit corpus.yaml gives."""
    entry = next(e for e in corpus_entries() if e["slug"] == slug)
    assert entry["half"] == "fit", f"{slug} is in the holdout half: tests read the fit half only"
    folder = log_folder(slug)
    for file in entry["files"]:
        path = folder / file["file"]
        assert path.is_file(), (f"{path} is not here: {file['path']} from {entry['repository']} at {entry['commit']} "
                                "(tests/fixtures/real_runs/corpus.yaml), kept in shared/real_runs/")
        assert hashlib.sha256(path.read_bytes()).hexdigest() == file["sha256"], path
    return log_source(entry, folder)


def derived(source: str, task_reward: str | None = None) -> RunLog:
    """The run's series as triage ranks on them: today's names, the roles, the derived metrics."""
    log = canonical(read_source(source)).log
    add_derived(log, assign_roles(log, reward_functions(log), task_reward))
    return log


def last(log: RunLog, name: str) -> float | None:
    points = log.series.get(name)
    return points[-1][1] if points else None


# --------------------------------------------------------------------------- the run first


def test_a_run_that_learned_is_said_to_learn_and_has_no_suspect(hypotheses):
    """UnslothGRPO: correctness 0.23 -> 1.25; soft and strict format rewards 0 throughout (readings, not faults)."""
    report = triage(str(corpus("unslothgrpo__ckpt250")), hypotheses)
    assert report.progress.state == "learning", report.progress.sentence()
    assert report.progress.change_low > 0  # the whole 95% interval above 0
    assert report.suspects() == []
    assert all(not entry.suspect for entry in report.ranking)


def test_a_run_that_collapsed_is_getting_worse(hypotheses):
    """nips-grpo-dynamics rho 1.0: reward 0.65 -> 0.005, read from its console log (buffered dicts among tqdm bars)."""
    report = triage(str(corpus("nips__exp1a_rho1.00_seed42")), hypotheses)
    assert report.kind == "console" and report.steps == 40
    assert report.progress.state == "getting worse" and report.progress.change_high < 0
    assert any("logging_steps 5, 40 printed steps over the 200" in f for f in report.findings), report.findings


def test_a_run_that_blew_up_is_getting_worse_whatever_its_reward_did(hypotheses):
    """Wordle at learning rate 5e-3 (TensorBoard): kl 1e24 at step 10, entropy to 1e-13, reward -0.07 then 0 with
    every group tied: not learning, though the reward 'rose' to 0. The authors' fix was the learning rate (h16)."""
    report = triage(str(corpus("wordle__tb_1767712816_lr5e-3")), hypotheses)
    assert report.progress.state == "getting worse" and "diverged at step 10: kl reached" in report.progress.why
    assert report.suspects()[0].id == "h16", [(e.id, e.evidence) for e in report.ranking[:4]]


# --------------------------------------------------------------------------- the classes of the issue, one by one


def test_a_held_out_accuracy_decides_the_reading_and_names_the_training_reward_beside_it(hypotheses):
    """The a5align runs log an evaluation pass every 5 steps: eval/reward (format plus answer), eval/format_accuracy
    and eval/answer_accuracy. The score read is the answer's accuracy: a format score is not the task's."""
    learned = triage(str(corpus("a5align__reinforce_with_baseline")), hypotheses).progress
    assert (learned.state, learned.heldout, learned.metric) == ("learning", True, "eval/answer_accuracy")
    assert learned.steps == 41 and learned.change_low > 0
    assert learned.smallest_change >= 0.02  # two points of an accuracy, at least
    assert "on its training reward task_reward/mean it is learning" in learned.also
    collapsed = triage(str(corpus("a5align__grpo_no_clip")), hypotheses).progress
    assert (collapsed.state, collapsed.heldout) == ("getting worse", True), collapsed.sentence()
    # Without a baseline the rollout reward climbs 0.24 -> 0.30 while the answer accuracy on held-out prompts peaks
    # and falls back: the authors call it a run that did not hold its gains, and so does triage.
    flat = triage(str(corpus("a5align__no_baseline")), hypotheses).progress
    assert (flat.state, flat.heldout) == ("flat", True), flat.sentence()
    assert "on its training reward task_reward/mean it is learning" in flat.also


def test_a_held_out_accuracys_change_counts_against_the_spread_its_mean_allows(hypotheses):
    """No spread is logged beside these held-out scores, so a change counts from a tenth of the widest spread a score
    between 0 and 1 can have at its mean. open-rl run19r: graded 0.887 -> 0.953 on held-out prompts, the gain its
    README names (a tenth of the level, 0.092, had read it flat). A CS336 loop without a baseline: val_accuracy
    0.172 -> 0.203, three points where such a score spreads by 0.39: flat, as its authors' report reads their runs
    ("All results show minimal improvement"; a change counted from 0.02 had read it learning)."""
    gained = triage(str(corpus("openrl__run19r")), hypotheses).progress
    assert (gained.state, gained.heldout) == ("learning", True), gained.sentence()
    assert 0.025 < gained.smallest_change < 0.03
    level = triage(str(corpus("cs336dequeueing__grpo_no_baseline")), hypotheses).progress
    assert (level.state, level.heldout, level.metric) == ("flat", True, "val_accuracy"), level.sentence()
    assert level.change > 0.02 and level.smallest_change > level.change


def test_a_reward_that_swings_with_its_prompt_batches_is_flat_by_its_halves(hypotheses):
    """RLVR's bf16 adaptation run (lr 1e-6 updates rounded away in bf16, its authors found; 256 SVAMP prompts cycled
    8 a step): quarters 0.39, 0.49, 0.39, 0.49, halves 0.44 and 0.44. Flat, and with its groups untied and its
    gradients flowing, updates too small to move the policy (h26) first."""
    report = triage(str(corpus("rlvr__win4070_v1_bf16_stageb_ckpt0")), hypotheses)
    assert report.progress.state == "flat", report.progress.sentence()
    assert report.suspects()[0].id == "h26", [(e.id, e.evidence) for e in report.ranking[:4]]


def test_the_held_out_score_read_is_the_task_reward_functions_own(hypotheses):
    """Wordle stage 2 (TRL's eval rows every 20 steps): the held-out score read is the task reward function's own
    (eval_rewards/wordle_reward_func/mean, before eval_reward); level, as the training reward is."""
    progress = triage(str(corpus("wordle__stage2_ckpt160")), hypotheses).progress
    assert (progress.state, progress.heldout) == ("flat", True), progress.sentence()
    assert progress.metric == "eval_rewards/wordle_reward_func/mean" and progress.steps == 8
    assert progress.also.startswith("on its training reward task_reward/mean it is flat"), progress.also


def test_1_a_kl_coefficient_is_not_fitted_from_noise():
    """wordle lara_4090 (beta 0.04, loss and kl barely related: R^2 0.006) gives no coefficient; steps where every
    group tied give beta itself (loss / kl, no policy term): 0.04 on the red-teaming run, 0.05 on the Wordle runs."""
    noisy = derived(str(corpus("wordle__lara_4090_ckpt400")))
    assert last(noisy, "kl/loss_fit") < 0.05 and "kl/implied_coefficient" not in noisy.series
    tied = derived(str(corpus("redteam__finance_sparse")))
    assert last(tied, "kl/implied_coefficient") == pytest.approx(0.04, rel=0.02)
    board = derived(str(corpus("wordle__tb_1767724543")))
    assert last(board, "kl/implied_coefficient") == pytest.approx(0.05, rel=0.02)


def test_1_a_trl_too_old_to_count_ties_gives_its_kl_coefficient_at_steps_whose_rewards_all_tied(tmp_path):
    """nips-grpo-dynamics' gate 2 at rho 0.7 (a TRL that logs no frac_reward_zero_std): at a step whose reward_std is
    0 every group tied, so loss / kl there is beta, 0.04, where a fit through the noisy steps reads 0.34 once the
    rows average two steps each."""
    log = derived(str(corpus("nips__gate2_rho0.70_seed42")))
    assert "frac_reward_zero_std" not in log.series
    assert last(log, "kl/implied_coefficient") == pytest.approx(0.04, rel=0.05) and last(log, "kl/loss_fit") == 1.0
    # the same steps two to a row, as logging_steps 2 logs them: a row of two tied steps still gives beta exactly
    logged = read_source(str(corpus("nips__gate2_rho0.70_seed42")))
    steps = [step for step, _ in logged.series["loss"]]
    rows = [{"step": b, **{key: statistics.fmean(dict(logged.series[key])[s] for s in (a, b))
                           for key in ("loss", "kl", "reward", "reward_std")}} for a, b in zip(steps[::2], steps[1::2])]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert last(derived(str(tmp_path / "metrics.jsonl")), "kl/implied_coefficient") == pytest.approx(0.04, rel=0.05)


def test_2_kl_of_exactly_0_at_every_step_is_no_kl_term(hypotheses):
    """nips-grpo-dynamics csd pilot: kl logged as 0.0 at all 200 steps (beta 0)."""
    report = triage(str(corpus("nips__csd_pilot_const_seed42")), hypotheses)
    assert report.requirements["kl_term"].met is False and "exactly 0" in report.requirements["kl_term"].why
    for hypothesis in ("h03", "h18"):
        entry = next(e for e in report.ranking if e.id == hypothesis)
        assert entry.not_applicable and not entry.suspect
    assert any("kl is exactly 0 at every logged step" in said for said in report.expected)


def test_3_num_tokens_counts_completions_too(hypotheses):
    """The red-teaming run's prompts come from one long template (increments ~7,200 tokens, ~65 of them completion
    tokens a completion): once the completions are taken out, the prompts still vary by 0.7%, no budget cuts them."""
    log = derived(str(corpus("redteam__finance_sparse")))
    assert 0.005 < last(log, "prompts/tokens_per_step_cv") < 0.012  # read as a budget before (<= 0.012)
    report = triage(str(corpus("redteam__finance_sparse")), hypotheses)
    assert "h04" not in [e.id for e in report.suspects()]


def test_3_completions_that_barely_change_leave_prompt_lengths_unknown():
    """Completion lengths pinned (every completion at the cap): num_tokens cannot tell prompts from completions."""
    history = json.loads((corpus("unslothgrpo__ckpt250") / "trainer_state.json").read_text())["log_history"]
    rows = [dict(row, completion_length=200.0) for row in history if "num_tokens" in row or "loss" in row]
    log = RunLog("pinned", "trainer_state")
    for row in rows:
        for key, value in row.items():
            if key != "step" and isinstance(value, (int, float)):
                log.add(key, row["step"], value)
    named = canonical(log.sort()).log
    add_derived(named, assign_roles(named, reward_functions(named), None))
    assert "prompts/tokens_per_step_cv" not in named.series


def _every(history: list[dict], k: int) -> list[dict]:
    """The rows a run logs with logging_steps k: each averages the k steps it covers (as TRL's metrics do)."""
    steps = [row for row in history if "loss" in row]
    out = []
    for start in range(0, len(steps) - k + 1, k):
        window = steps[start:start + k]
        keys = set.intersection(*(set(row) for row in window))
        out.append({key: (statistics.fmean(row[key] for row in window) if key != "step" else window[-1]["step"])
                    for key in keys if isinstance(window[0][key], (int, float))})
    return out


def test_3_prompt_lengths_are_read_per_step_whatever_the_logging_interval(hypotheses, tmp_path):
    """The red-teaming run as logging_steps 2 and 5 would log it: a row's num_tokens increment sums the prompts of
    its steps, which vary less than one step's do; read per step, the prompts vary as much, and no budget is read."""
    source = corpus("redteam__finance_sparse")
    alone = last(derived(str(source)), "prompts/tokens_per_step_cv")
    history = json.loads((source / "trainer_state.json").read_text())["log_history"]
    for k in (2, 5):
        (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": _every(history, k)}))
        assert last(derived(str(tmp_path)), "prompts/tokens_per_step_cv") == pytest.approx(alone, rel=0.3), k
        assert "h04" not in [e.id for e in triage(str(tmp_path), hypotheses).suspects()]


def test_4_a_first_row_that_averages_several_steps_says_nothing_of_the_reference(hypotheses, tmp_path):
    """UnslothGRPO's own steps, as logging_steps 5 would log them: the first row (steps 1-5) holds a small, growing
    KL (the policy moved in steps 2-5): not 'a wrong reference at the first step'."""
    history = json.loads((corpus("unslothgrpo__ckpt250") / "trainer_state.json").read_text())["log_history"]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": _every(history, 5), "logging_steps": 5}))
    report = triage(str(tmp_path), hypotheses)
    assert report.rank_of("h18") is not None
    h18 = next(e for e in report.ranking if e.id == "h18")
    assert h18.evidence == 0 and "kl/first_step" in {m for r in h18.cannot_tell() for m in r.missing}
    assert history[0]["kl"] == 0.0  # logged alone, step 1's KL is 0: the reference is the starting policy
    alone = triage(str(corpus("unslothgrpo__ckpt250")), hypotheses)
    assert next(e for e in alone.ranking if e.id == "h18").evidence < 0


def test_5_one_reading_counts_for_one_hypothesis(hypotheses):
    """Wordle stage 2 (learning rate 3e-7): kl about 1 from step 1 that never grows. The KL at step 1 speaks of the
    reference (h18); the learning rate (h16) would need the KL to rise, and it does not."""
    report = triage(str(corpus("wordle__stage2_ckpt160")), hypotheses)
    suspects = [e.id for e in report.suspects()]
    assert "h16" not in suspects and "h18" in suspects, [(e.id, e.evidence) for e in report.ranking[:4]]
    log = derived(str(corpus("wordle__stage2_ckpt160")))
    assert last(log, "kl/first_step") > 0.5 and abs(last(log, "kl/early_rise")) < 0.5


def test_6_the_task_reward_is_chosen_by_what_its_name_says_not_its_weight():
    """UnslothGRPO's five rewards: correctness, a digits-only int reward, soft and strict format, xml counts. Were the
    int reward weighted 3x, it would still be a format reward."""
    log = canonical(read_source(str(corpus("unslothgrpo__ckpt250")))).log
    functions = reward_functions(log)
    candidates, why = task_candidates(log, functions)
    assert candidates == ["correctness_reward_func"] and "name says it scores correctness" in why
    weights = {f: (3.0 if f == "int_reward_func" else 1.0) for f in functions}
    assert default_task(log, functions, weights)[0] == "correctness_reward_func"


def test_6_a_penalty_at_most_0_by_design_is_auxiliary():
    """The same run, with its format rewards turned into penalties (score - 0.5, never above 0): never the task."""
    source = canonical(read_source(str(corpus("unslothgrpo__ckpt250")))).log
    log = RunLog("penalised", "trainer_state", series=dict(source.series))
    for func in ("soft_format_reward_func", "strict_format_reward_func"):
        log.series[f"rewards/{func}/mean"] = [(s, v - 0.5) for s, v in source.series[f"rewards/{func}/mean"]]
    candidates, why = task_candidates(log, sorted(reward_functions(log)))
    assert "soft_format_reward_func" not in candidates and "at most 0 at every step (a penalty)" in why


def test_6_the_report_says_when_another_task_reward_would_change_the_suspects(hypotheses):
    report = triage(str(corpus("unslothgrpo__ckpt250")), hypotheses)
    assert report.assumed[0].startswith("task reward: correctness_reward_func (its name says it scores correctness")
    other = triage(str(corpus("unslothgrpo__ckpt250")), hypotheses, task_reward="soft_format_reward_func")
    differs = [e.id for e in other.ranking if e.evidence >= 0.5] != [e.id for e in report.ranking if e.evidence >= 0.5]
    assert differs == any(said.startswith("with soft_format_reward_func as the task reward") for said in report.assumed)


def test_6_with_names_that_say_nothing_the_task_reward_is_the_one_furthest_below_its_best():
    """phi4-reasoning's five rewards (willccbb's: correctness, a digits-only int reward, soft and strict format, xml
    counts), equally weighted, with names that say nothing of their role (rewards/func_1/mean, ...), as a user's
    reward_fn_1 names them: the format checks are soon met or never met, the answer's check scores furthest below its
    own best on average, and is the task's; the sort order of the names (alphabetical in trainer_state.json) decides
    nothing."""
    log = canonical(functions_unnamed(read_source(str(corpus("phi4reasoning__phi4_14b_gsm8k_a100"))))).log
    named = canonical(read_source(str(corpus("phi4reasoning__phi4_14b_gsm8k_a100")))).log
    functions = reward_functions(log)
    task, why = default_task(log, functions, dict.fromkeys(functions, 1.0))
    correctness = reward_functions(named).index("correctness_reward_func")
    assert task == functions[correctness] and "furthest below its own best" in why, why
    assert correctness != 0  # not the first listed


def test_6_a_reward_function_that_scores_0_at_every_step_keeps_the_default_weight():
    """ToN's GUI agent: its accuracy reward scores 0 at every step, so TRL's reward is its format reward's mean by
    itself. That pins the format reward's weight (1), not the accuracy's: whatever weight it has adds nothing, so it
    keeps TRL's default, 1, and is not read as a metric logged at weight 0."""
    log = canonical(read_source(str(corpus("ton__gui_agent_qwen25vl_accuracy_evvobjd4")))).log
    roles = assign_roles(log, reward_functions(log), None)
    assert roles.weights == {"accuracy_reward": 1.0, "format_reward": 1.0}, roles.weights
    assert roles.task == "accuracy_reward"


def test_6_a_pass_rate_a_loop_logs_beside_its_reward_is_the_task_reward(hypotheses):
    """pvgrpo's own pipeline around TRL logs reward_mean (a shaped reward) beside canonical_pass_rate (seed 123:
    0.14 -> 0.08 -> 0.16 -> 0.30 by quarter; the authors: "scientific_success") and format_accuracy. The pass rate is
    the task's reward, and the run reads as learning, as it did."""
    report = triage(str(corpus("pvgrpo__grpo_formal_seed123")), hypotheses)
    assert report.assumed[0].startswith("task reward: canonical_pass_rate (the only reward function logged")
    assert report.progress.state == "learning", report.progress.sentence()


def test_7_an_isolated_nan_is_a_skipped_step_not_a_divergence():
    """Wordle at 5e-3: grad_norm inf at step 10 only (finite at the 14 steps after)."""
    log = read_source(str(corpus("wordle__tb_1767712816_lr5e-3")))
    said = [f for f in log.findings(is_training_metric) if f.startswith("train/grad_norm")]
    assert said and "isolated steps" in said[0] and "not a divergence" in said[0] and "diverged" not in said[0]
    # while the same rate's other run, whose grad norm and kl end NaN and infinite at its last step, diverged there
    wordle = read_source(str(corpus("wordle__tb_1767713359_lr5e-3")))
    assert wordle.diverged_at(is_training_metric) == ("train/grad_norm", 50)


def test_8_a_sparse_reward_ranks_first(hypotheses):
    """The red-teaming run 'with sparse reward' (the authors then made it dense): reward <= 0.125, 75-100% of
    groups tied, grad norm ~0.01."""
    report = triage(str(corpus("redteam__finance_sparse")), hypotheses)
    assert report.suspects()[0].id == "h11", [(e.id, e.evidence) for e in report.ranking[:4]]
    assert any("sparse reward" in r.shows for r in report.suspects()[0].supporting())


def test_8_tied_groups_of_solved_prompts_are_no_suspect(hypotheses):
    """nips-grpo-dynamics rho 3.0: 77-87% of groups tied because the model solves them (reward 0.89)."""
    report = triage(str(corpus("nips__exp1a_rho3.00_seed42")), hypotheses)
    assert "h11" not in [e.id for e in report.suspects()]


def test_9_every_format_of_the_fit_half_is_read(hypotheses):
    entries = [e for e in corpus_entries() if e["half"] == "fit"]
    for entry in entries:
        report = triage(str(corpus(entry["slug"])), hypotheses, run=entry.get("run_name"))
        assert report.steps >= 1, entry["slug"]


def test_10_a_flat_run_whose_policy_barely_moves_is_named(hypotheses):
    """Wordle lara_4090: reward -0.23 -> -0.23 over 400 steps, no group ever tied, kl under 0.009."""
    report = triage(str(corpus("wordle__lara_4090_ckpt400")), hypotheses)
    assert report.progress.state == "flat"
    assert report.progress.verdict == "updates too small to move the policy", report.progress.sentence()
    assert [e.id for e in report.suspects()][:1] == ["h26"], report.ranking_record()
    assert "Updates too small to move the policy" in report.progress.sentence()
    assert report.as_json()["progress"]["verdict"] == "updates too small to move the policy"


def test_10_a_flat_run_with_no_kl_whose_gradient_flows_names_small_updates_by_elimination(hypotheses):
    """gsm8k-grpo at lr 1e-6 (its author's sweep; 2e-5 learns to 0.88): accuracy 0.12 -> 0.17, reward std 0.31-0.37
    (groups vary), grad norm ~0.45, no kl, entropy or learning rate logged. Nothing shows the policy move or not:
    small updates are named by elimination, as a suspect at the threshold, and the report says so."""
    report = triage(str(corpus("gsm8kgrpo__lr_1e-6")), hypotheses)
    assert report.progress.state == "flat"
    assert report.progress.verdict == "updates likely too small to move the policy", report.progress.sentence()
    assert "no kl is logged" in report.progress.verdict_why
    assert [(e.id, e.evidence) for e in report.suspects()] == [("h26", 0.5)], report.ranking_record()


def test_10_a_flat_run_under_a_large_learning_rate_is_no_small_update(hypotheses):
    """The same numbers under a logged learning rate at the top of GRPO recipes' (1e-4 or more) are not read as small
    updates: gsm8k-grpo's lr 1e-6 run, given a logged rate of 2e-4."""
    rows = json.loads(next(corpus("gsm8kgrpo__lr_1e-6").parent.glob("*.json")).read_text())
    log = RunLog(source="gsm8k-grpo lr 1e-6, rate 2e-4", kind="json")
    for row in rows:
        for key in ("reward_mean", "reward_std", "grad_norm", "accuracy"):
            log.add(key, row["step"], row[key])
        log.add("learning_rate", row["step"], 2e-4)
    canon = canonical(log).log
    add_derived(canon, assign_roles(canon, reward_functions(canon), None))
    assert run_progress(canon).verdict == ""


def test_9_a_loops_name_colon_value_lines_are_read(hypotheses):
    """GRPO-ZERO-ES-ZO's countdown run prints "Step N/15, reward: ..., success: ..., format: ..., loss: ...,
    grad_norm: ...": 15 steps, the reward 0.079 at step 1 and 0.161 at step 15."""
    log = read_source(str(corpus("grpozeroeszo__countdown_grpo")))
    assert [step for step, _ in log.series["reward"]] == list(range(1, 16))
    assert log.series["reward"][0][1] == pytest.approx(0.079, abs=5e-4)
    assert log.series["reward"][-1][1] == pytest.approx(0.161, abs=5e-4)


def test_3_a_kl_that_spikes_is_the_kl_terms_and_no_wrong_reference_or_high_rate(hypotheses):
    """rl_grpo_qwen_math's Monarch run 3: reward 0.14 in every quarter; the loop's kl_divergence reads thousandths on
    most steps and spikes to 30-1547 on others, its policy_loss about half or a fifth of the kl there. The authors:
    the reference drifted and the KL gradient dominated (h03). The policy_loss is the loop's loss (the KL term enters
    it at 0.5, R^2 0.93); a loop's step-0 kl of 5e-4 is its scoring floor (its run 12, which learned, reads 6e-4),
    not a wrong reference (h18); early spikes the run's median kl does not keep threw no policy away (h16). Nor is
    the drift of about 20 nats under so strong a KL term a loss on tokens the policy did not write (h02): a term that
    strong lets the policy drift that far only where the KL it computes is wrong."""
    report = triage(str(corpus("grpoqwenmath__monarch_run3")), hypotheses)
    assert report.progress.state == "flat"
    suspects = [e.id for e in report.suspects()]
    assert suspects[0] == "h03", report.ranking_record()
    assert not {"h18", "h16", "h02"} & set(suspects), report.ranking_record()
    learned = triage(str(corpus("grpoqwenmath__monarch_run12")), hypotheses)
    assert learned.progress.state == "learning" and learned.suspects() == [], learned.ranking_record()


def test_9_a_terminal_capture_pasted_into_markdown_is_read_as_its_console_log(hypotheses):
    """trl_DAPO keeps its run as a terminal capture in a Markdown file (run_terminal.md): TRL's dict lines among
    tqdm bars and notes, which triage reads as the console log they are."""
    report = triage(str(corpus("trldapo__qwen25vl3b_aokvqa")), hypotheses)
    assert report.kind == "console" and report.steps == 18
    assert "mc_idx_reward" in report.reward_functions and report.progress.state != "unknown"


def test_9_a_hand_written_loops_wrapped_names_are_read_and_its_rows_are_not_step_1(hypotheses):
    """RL_GRPO's grpo_metrics.json: lists named rewards_avg, accuracies_avg and kl_avg (20-step moving averages,
    one every 10 steps, no step numbers). Read as the reward, an accuracy reward and the KL; the first row averages
    many steps, so its KL above 0 does not say the reference is another model (h18)."""
    report = triage(str(corpus("rlgrpo__arith_3000st_inner5")), hypotheses)
    assert report.renamed["rewards_avg"] == "reward" and report.renamed["kl_avg"] == "kl"
    assert report.renamed["accuracies_avg"] == "rewards/accuracy/mean" and report.reward_functions == ["accuracy"]
    assert report.progress.state == "learning", report.progress.sentence()  # accuracy 0.53 -> 0.65 by quarter
    assert not report.suspects(), report.ranking_record()
    h18 = next(e for e in report.ranking if e.id == "h18")
    assert not h18.supporting(), [r.shows for r in h18.supporting()]


def test_10_a_loops_printed_groups_are_its_rewards_and_its_signed_kl_is_no_broken_kl(hypotheses):
    """autoresearch prints each step's group ("[step 0004] rewards=[0,1] loss=... kl=..."; a tied group's step is
    "SKIP rewards=[1,1]"): the lists are the steps' rewards, and 81 % of the steps' groups tied, which the authors
    fixed with a curriculum (h11). Its kl is the loop's signed mean log-ratio, down to -0.47 at a step and about 0 on
    the whole: read as logged, not as a broken KL (h03)."""
    report = triage(str(corpus("autoresearch__grpo_v3_run")), hypotheses)
    assert report.steps == 207 and report.progress.state == "flat", report.progress.sentence()
    assert [e.id for e in report.suspects()][:1] == ["h11"], report.ranking_record()
    assert "h03" not in [e.id for e in report.suspects()]
    assert any("read as logged" in finding for finding in report.findings)


def test_10_a_loops_kl_below_0_on_the_whole_is_its_sign_convention(hypotheses):
    """SimpleMind's agent RL runs (MiniMind's train_agent.py) log KL as the token mean of ref_logp - logp, the term
    their k3 penalty is built from: below 0 on 88-91 % of the steps, -0.29 and -1.1 on average, down to -10 where the
    lr 3e-6 run collapsed. Read with its sign turned, so the loss that grows with it is a KL penalty, not one with a
    negative coefficient, and no h03 is named on its sign. Its camelCase names are read (AvgLen, GrpStd)."""
    report = triage(str(corpus("simplemind__agent_rl_v4_lr3e6")), hypotheses)
    assert any("with its sign turned" in finding for finding in report.findings), report.findings
    assert report.renamed["avg_len"] == "completions/mean_length" and report.renamed["grp_std"] == "reward_std"
    assert "h03" not in [e.id for e in report.suspects()], report.ranking_record()
    log = derived(str(corpus("simplemind__agent_rl_v5_lr1e6")))
    assert statistics.fmean(v for _, v in log.series["kl"]) == pytest.approx(0.29, abs=0.01)
    assert "kl/lowest" not in log.series


def test_9_a_loops_step_blocks_are_read(hypotheses):
    """rookworld-rlvr's mini trainer prints each step as a block ("Step N: Sampled 8 prompts", per-sample reward
    lines, "Rewards: min=.., max=.., mean=.., std=.." under "=== ROLLOUT DETAILS (Step N) ===", then "Step N | Time"
    and indented "Loss:", "KL Divergence:", "Gradient Norm:" lines), every line echoed again with its logger's
    prefix: 26 steps, the rollout reward 0.508 at step 1, none of the samples' rewards read as the step's."""
    report = triage(str(corpus("rookworldrlvr__mini_continuous_fixed")), hypotheses)
    assert report.kind == "console" and report.steps == 26, report.findings
    log = read_source(str(corpus("rookworldrlvr__mini_continuous_fixed")))
    assert log.series["rewards_mean"][0] == (1, 0.508) and len(log.series["rewards_mean"]) == 26
    assert report.progress.state == "flat", report.progress.sentence()


def test_12_a_tinker_runs_correct_share_is_its_task_and_its_unended_completions_are_clipped(hypotheses):
    """joanvelja's Qwen3-30B thinking run on Tinker: env/all/correct is the environment's share of correct answers
    (the total reward adds format terms), so it is the task reward; env/all/format_eos is the share of completions
    that ended, 44 % at the first step, so over half ran into the 8,192-token budget, which the authors name as
    what held the run back (h12)."""
    report = triage(str(corpus("joanvelja__qwen3-30b-think-v3b")), hypotheses)
    assert report.reward_functions == ["correct"] and report.progress.state == "flat", report.progress.sentence()
    assert report.renamed["env/all/format_eos"] == "completions/clipped_ratio"
    assert [e.id for e in report.suspects()][:1] == ["h12"], report.ranking_record()


def test_16_a_reward_that_collapses_with_the_entropy_is_the_learning_rates(hypotheses):
    """dphuang2's RL-from-scratch run on Tinker (LoRA, lr 4.9e-4): correct 0.3 -> 0 by step 7, every group all-bad,
    entropy 0.25 -> 0.02; the authors fix it with a learning rate ten times smaller (h16). The entropy fell with the
    reward, as an update too large wrecks both: h16 is the suspect, and h15, whose entropy fell as a consequence, is
    none."""
    report = triage(str(corpus("dphuang2__iter05_rl_matched")), hypotheses)
    assert report.progress.state == "getting worse", report.progress.sentence()
    assert [e.id for e in report.suspects()] == ["h16"], report.ranking_record()


@pytest.mark.parametrize("slug", ["wordle__tb_1767712816_lr5e-3", "wordle__tb_1767713359_lr5e-3"])
@pytest.mark.parametrize("kept", [every_other_row, pairs_averaged])
def test_16_a_learning_rate_that_threw_the_policy_far_is_named_whatever_the_logging_interval(hypotheses, slug, kept):
    """The Wordle runs at lr 5e-3 (the authors' fix: a smaller rate), as logged and as a longer logging interval
    keeps them. Every other row, the first row is step 2, where the KL already reads 3-4 nats: it rose before the
    first row, so no rise shows over the first rows. The KL's level (kl/thrown: the lesser of its mean over the first
    three rows and its median, 1.4-3 nats) reads the same either way, and with a rate of 1e-3 or more it names h16,
    and the clipped completions and tied groups it left behind are its consequences, not suspects of their own."""
    log = read_source(str(corpus(slug)))
    for copy in (log, kept(log)):
        named = canonical(copy).log
        add_derived(named, assign_roles(named, reward_functions(named), None))
        assert last(named, "kl/thrown") >= 1.0
        assert [e.id for e in triage_log(copy, hypotheses).suspects()] == ["h16"], triage_log(copy, hypotheses)


def test_16_groups_tied_once_the_reward_collapsed_are_the_collapses_whatever_the_logging_interval(hypotheses):
    """dphuang2's run (lr 4.9e-4, correct 0.36 -> 0) with each pair of steps averaged: its best step reads 0.49, under
    half a pass, so the tied groups look like a sparse reward; but a reward that started partly right and collapsed
    to nothing ties its groups by collapsing, and that weighs as much as a wrecked policy does against h11."""
    log = read_source(str(corpus("dphuang2__iter05_rl_matched")))
    report = triage_log(pairs_averaged(log), hypotheses)
    assert [e.id for e in report.suspects()] == ["h16"], report.ranking_record()


def test_15_an_entropy_level_that_spikes_is_read_over_a_tenth_of_a_long_run(hypotheses):
    """FinQA's 2400-step run, which learned (its authors measure 3 points of held-out accuracy gained): its entropy
    sits near 0.035 at every tenth of the run and spikes to 1 on single steps, so its first and last ten rows read
    1.33 as logged and 0.13 every other row. Read over a tenth of the run at each end the entropy holds (about 0.9)
    either way: no collapse, no h15."""
    log = read_source(str(corpus("finqa__stage7_grpo_long2400")))
    for copy in (log, every_other_row(log)):
        report = triage_log(copy, hypotheses)
        assert "h15" not in [e.id for e in report.suspects()], report.ranking_record()


def test_16_a_kl_that_grows_as_completions_shrink_is_the_learning_rates(hypotheses):
    """SimpleMind's agent RL v4 (MiniMind 64M at lr 3e-6): its signed KL, read with its sign turned, grows from about
    0.1 to 2-4 nats per token after step 230 while the mean completion falls 68 -> 32 tokens, with steps of one
    token; the authors read it as policy collapse from a learning rate still too large (h16), and h16 ranks first,
    above the LoRA-sync reading the same KL gives."""
    report = triage(str(corpus("simplemind__agent_rl_v4_lr3e6")), hypotheses)
    assert report.progress.state == "flat", report.progress.sentence()
    assert [e.id for e in report.suspects()][:1] == ["h16"], report.ranking_record()


def test_6_a_run_that_logs_its_rewards_parts_beside_their_total_is_read(hypotheses):
    """med-record logs four component rewards beside reward_fn_total, the one it trains on: the weights fitted on
    TRL's reward are the total's 1 and 0 for each part, so the task reward (finding accuracy, by its name) is
    weighted 0. Triage reads the run, says so, and derives nothing that divides by the task's weight."""
    report = triage(str(corpus("medrecord__qwen2.5-3b-grpo_kaggle")), hypotheses)
    assert report.steps == 150 and report.progress.state == "flat", report.progress.sentence()
    weights = next(said for said in report.assumed if said.startswith("reward weights"))
    assert "reward_fn_total 1" in weights and "-0" not in weights, weights


def test_6_a_check_of_the_answer_that_never_pays_is_still_the_task(hypotheses):
    """duruoli's Llama-3.1 run: check_answer is -1.0 at every one of 50 steps while the format rewards vary. At most 0
    at every step, it looked like a penalty by design and was set aside, so a format reward became the task and h26
    and h16 were read off it. A function whose name says it checks the answer, with no other that does, is the
    task's reward never paying."""
    report = triage(str(corpus("statssafety__llama3.1_8b_quantqa_grpo_ckpt50")), hypotheses)
    assert report.assumed[0].startswith("task reward: check_answer (its name says it scores correctness, though it "
                                        "never pays"), report.assumed
    assert report.progress.state == "flat" and report.progress.start == report.progress.end == -1.0
    assert not {"h16", "h26"} & {e.id for e in report.suspects()}, [(e.id, e.evidence) for e in report.ranking[:4]]


def test_6_a_loops_per_function_rewards_beside_their_sum_name_the_task(hypotheses):
    """desirepathh's DAPO loop logs mean_format_reward and mean_answer_reward beside mean_reward, their sum with the
    answer weighted 2 (its drgrpo_grader.py: "reward = format_reward + answer_weight * answer_reward"): the answer
    reward is the task's, by its name, and the weights are read off the sum, so the run is read on its answers
    (0.26 -> 0.28), not on the sum the format reward pads."""
    report = triage(str(corpus("desirepathh__dapo_v2_additive")), hypotheses)
    assert report.assumed[0].startswith("task reward: answer (its name says it scores correctness"), report.assumed
    assert "reward weights format 1, answer 2 (inferred" in " ".join(report.assumed), report.assumed
    assert report.progress.metric == "task_reward/mean" and abs(report.progress.start - 0.257) < 0.005


def test_13_a_task_reward_whose_mean_never_moves_from_0_is_a_reward_that_never_pays(hypotheses):
    """SaniyaGapchup's Gemma-3 notebook: check_answer reads 0 at every one of 200 steps (its format regex never matched,
    so the answer was never checked), while the format rewards spread the completions. Older TRL logs a reward
    function's mean alone: a mean that is the same number at every step is every completion scoring it, so the
    task reward tells no completion apart (h13's reading), and the total reward's spread, which the format rewards
    make, is not read as advantages the task could learn from (h26)."""
    report = triage(str(corpus("gemma3platinum__gemma3_1b_gsm8k_platinum")), hypotheses)
    assert report.progress.state == "flat" and not report.progress.verdict, report.progress.sentence()
    assert [e.id for e in report.suspects()] == ["h13"], [(e.id, e.evidence) for e in report.ranking[:4]]


def test_3_a_loops_kl_under_its_own_name_is_its_estimator_not_trls(hypotheses):
    """FlyingFish760's loop logs only kl_divergence, the mean log-ratio of the new policy to the old after each
    update, which swings below 0 (to -1.73) mid-run: a loop's own estimator, whose sign is no broken KL (h03), as
    the negative k3 TRL logs would be."""
    report = triage(str(corpus("cs336flyingfish760__mask_norm_04_24_kl")), hypotheses)
    assert report.progress.state == "unknown" and not report.suspects(), [(e.id, e.evidence) for e in report.ranking]


def test_3_a_log_whose_reward_has_a_loops_own_name_is_a_loops_whatever_file_it_wrote(hypotheses):
    """qwen3-8b-grpo-dapo-lab's run observer writes VeRL's metrics to a CSV under its own names (reward_mean,
    zero_std_group_ratio, response_length_mean, kl): a kl there is VeRL's estimator, which reads -5.6e-5 at its
    lowest, not TRL's k3, which cannot go below 0 (h03 was named on it); and tonywang1990's own trainer logs no kl,
    which says nothing of whether its loss has one (it was read as TRL's beta 0)."""
    report = triage(str(corpus("grpodapolab__a_grpo")), hypotheses)
    assert "h03" not in [e.id for e in report.suspects()], report.ranking_record()
    assert min(value for _, value in derived(str(corpus("grpodapolab__a_grpo"))).series["kl"]) < 0
    report = triage(str(corpus("gsm8kgrpo__baseline")), hypotheses)
    assert report.requirements["kl_term"].met is None, report.requirements["kl_term"]
    assert not any("so this run trains with beta 0" in said for said in report.expected), report.expected


def test_6_format_rewards_collected_while_a_negative_correctness_falls_are_read(hypotheses):
    """Reasoning-Vectors' easy run: correctness (scored -0.5 to 1, so its mean starts below 0) falls -0.05 -> -0.10
    while the exact-format reward climbs 0.19 -> 0.38 and the approximate one -0.20 -> 0.08; the authors' next
    revision drops the format rewards (h17). A ratio of means cannot read rewards below 0: the trend test does,
    and h17 is named."""
    report = triage(str(corpus("reasoningvectors__logs_easy")), hypotheses)
    assert report.progress.state == "getting worse", report.progress.sentence()
    assert "h17" in [e.id for e in report.suspects()][:3], report.ranking_record()
    log = derived(str(corpus("reasoningvectors__logs_easy")))
    assert log.series["aux_reward/collected_signed"][-1][1] == 1.0


def test_10_a_count_out_of_a_total_is_its_share(hypotheses):
    """grpo-reliability-engineering prints "correct=3/4 rewards=['0.80', ...]" a step: the task reward is the share
    correct (about 0.5), not the count (which read 1.96 -> 1.98)."""
    report = triage(str(corpus("grporeliab__exp7")), hypotheses)
    assert report.reward_functions == ["correct"] and 0.3 < report.progress.start < 0.7, report.progress.sentence()
    assert not report.suspects(), report.ranking_record()


@pytest.mark.parametrize("slug,state", [("postllmsmall__grpo_gemma2_5", "getting worse"),
                                        ("postllmsmall__harder_data_20251224", "flat")])
def test_10_a_loops_short_names_are_read_where_its_lines_are_few_among_many(hypotheses, slug, state):
    """PostTraining-LLM-Small prints "[step 25] avg_loss=-0.0366 acc=0.9000" every 25 steps among thousands of lines
    of completions: avg_loss is the loss and acc the accuracy, wherever in the file the first such line is."""
    report = triage(str(corpus(slug)), hypotheses)
    assert report.reward_functions == ["accuracy"] and report.progress.state == state, report.progress.sentence()
    assert not report.suspects(), report.ranking_record()


@pytest.mark.parametrize("slug", ["nips__exp1a_rho0.10_seed42", "nips__exp1a_rho3.00_seed42",
                                  "nips__exp2_vanilla_rho1.0_seed42"])
def test_10_a_flat_run_near_its_ceiling_is_not_held_back(hypotheses, slug):
    """nips-grpo-dynamics' runs at rho 0.1, 3 and 1 start at 0.87-0.90 of an accuracy and stay there: level, with
    little left to learn, as their authors read them. TRL's importance weights under vLLM do spread (h27's reading:
    0.45-1.69 at a typical step on 200-token completions): present, but not what holds a run at its ceiling back."""
    report = triage(str(corpus(slug)), hypotheses)
    assert report.progress.state == "flat" and report.progress.verdict == "already near its ceiling", (
        report.progress.sentence())
    assert not report.suspects(), report.ranking_record()
    assert "h27" in [e.id for e in report.ranking if e.present]


def test_11_steps_where_every_group_tied_mark_a_sparse_reward_without_the_tied_count(hypotheses):
    """membrane's repeat run (a CSV of its trainer_state, without frac_reward_zero_std): reward_std is exactly 0 on 23
    of 45 logged rows while the reward averages 0.003; the authors name the sparse reward (no group with a non-zero
    advantage) and fix it with a warm start. The rows where every group tied are a lower bound on the tied share, and
    h11 is the suspect."""
    log = derived(str(corpus("membrane__repeat_seed_3408")))
    assert last(log, "ties/whole_steps") == pytest.approx(23 / 45)
    report = triage(str(corpus("membrane__repeat_seed_3408")), hypotheses)
    assert [e.id for e in report.suspects()][:1] == ["h11"], report.ranking_record()


def test_6_a_reward_function_that_is_the_whole_reward_pins_the_weights_of_the_metrics_beside_it(hypotheses):
    """rs_aidams' gate run logs its one trained reward (`reward`) beside four metric functions it adds up from
    (correctness, format, think rate and tokens), all as TRL reward functions: they move together, so least squares
    cannot split them, yet `reward` alone is TRL's reward at every step. Its weight is 1 and the metrics' 0, and no
    metric is read as an auxiliary reward that outweighs the task (h20, h05). The folder holds one log, a dumped
    log_history.json, which is read."""
    report = triage(str(corpus("rsaidams__gate_lam2_0").parent), hypotheses)
    assert any("reward 1, metric_think_rate 0" in said for said in report.assumed), report.assumed
    assert not {"h20", "h05"} & {e.id for e in report.suspects()}, report.ranking_record()


def test_9_a_wandb_run_file_is_read_on_the_step_its_metrics_were_plotted_against(hypotheses):
    """JPassionQ's CS336 GRPO run, its W&B offline run file as committed: train/* plotted against grpo_step and
    eval/* against eval_step (define_metric), not W&B's row counter; the held-out accuracy rises 0.05 -> 0.64 over
    the 50 GRPO steps."""
    log = read_source(str(corpus("cs336jpassionq__grpo_clip_lr1e5_e3_tb128")))
    assert log.kind == "wandb" and [s for s, _ in log.series["train/reward_mean"]] == list(range(1, 51))
    assert log.series["eval/accuracy"][0][0] == 1 and log.series["eval/accuracy"][-1][0] == 50
    report = triage(str(corpus("cs336jpassionq__grpo_clip_lr1e5_e3_tb128")), hypotheses)
    assert report.progress.state == "learning" and report.progress.heldout, report.progress.sentence()


def test_9_a_loops_own_step_counter_and_summary_row_and_settings_are_read(hypotheses):
    """minimind-lab's metrics CSV is keyed by its outer_step and ends in a `completed` row with no step; its tied
    share is its degenerate_group_rate. Its JSONL ends in the same summary as a record ({"event": "completed",
    "outer_steps": 50, "mean_training_reward": 0.357, ...}): no step either, so the task reward is the 5 logged steps'
    reward, not the summary's mean read as a step of its own. miniLLM-RL's JSONL writes {"config": {...}, "metrics":
    {...}, "step": N}."""
    log = read_source(str(corpus("minimindlab__r02c_math_grpo")))
    assert [s for s, _ in log.series["reward"]][:2] == [10, 20] and len(log.series["reward"]) == 25
    assert canonical(log).log.series["frac_reward_zero_std"][-1] == (250, 1.0)
    summary_last = derived(str(corpus("minimindlab__r04c_target_grpo")))
    assert [s for s, _ in summary_last.series["task_reward/mean"]] == [10, 20, 30, 40, 50]
    # five logged steps are a trend (the first two against the last two): 0.19, 0.20 -> 0.55, 0.66 is learning
    assert run_progress(summary_last).state == "learning", run_progress(summary_last).sentence()
    log = read_source(str(corpus("minirl__dapo_learnability_lr3em7")))
    assert log.params["learning_rate"] == "3e-07" and len(log.series["reward"]) == 200


def test_9_areals_stats_as_its_users_extract_them_are_read(hypotheses):
    """Two repositories' AReaL runs, their main.log tables extracted to CSV: kimi3-align's synchronous baseline climbs
    0.38 -> 0.47 (its report's "Sync ceiling"); its distillation run's reward falls to 0 at step 105 and stays there
    ("VOID ... reward collapses to ~0"); teacher-answer-rl's AIME run logs its evaluation workflow's reward every 50
    steps, read as the held-out score beside a training reward that climbs (0.33 -> 0.51 by quarter)."""
    assert triage(str(corpus("kimi3align__p1_sync_h0")), hypotheses).progress.state == "learning"
    assert triage(str(corpus("kimi3align__p6_mopd_v1")), hypotheses).progress.state == "getting worse"
    progress = triage(str(corpus("teacheranswerrl__aime_grpo_original")), hypotheses).progress
    assert (progress.heldout, progress.metric) == (True, "eval-rollout/reward"), progress.sentence()
    assert "on its training reward task_reward/mean it is learning" in progress.also


def test_3_a_small_clear_held_out_change_the_training_reward_confirms_is_the_runs_direction(hypotheses):
    """agent on-policy distillation's Qwen2.5-3B runs: cr3q4lay's AIME score rises +0.048 over 23 evaluations (clear,
    under the 0.064 that counts on its own) while its training score climbs -0.48 -> -0.33 (labelled learned from
    its curves: the authors wrote nothing of it); gjvwlq13's falls -0.013 (clear, under 0.02) while its training
    score falls -0.60 -> -0.88. Each is read the way both readings go: the first learns, so its growing completions
    are no suspect."""
    learned = triage(str(corpus("agentopd__qwen2_3b_opd_cr3q4lay")), hypotheses)
    assert learned.progress.heldout and learned.progress.state == "learning", learned.progress.sentence()
    assert not learned.suspects(), learned.ranking_record()
    worse = triage(str(corpus("agentopd__qwen2_3b_opd_gjvwlq13")), hypotheses)
    assert worse.progress.heldout and worse.progress.state == "getting worse", worse.progress.sentence()


def test_9_a_wandb_run_folder_without_its_run_file_is_read_through_its_console_capture(hypotheses):
    """agent on-policy distillation (verl, Qwen3-4B): its W&B run folder was committed without run-<id>.wandb, so its
    files/output.log, the console W&B kept, is the log: verl's step lines, whose numbers numpy 2 prints as
    np.float64(...), and its validation under val-aux/, the held-out score that falls from 0.55 at step 0 to -1 as
    the answers collapse to one token (entropy to 2e-4)."""
    report = triage(str(corpus("agentopd__qwen3_4b_opd_i80f2v90")), hypotheses)
    assert report.kind == "console" and any("output.log, the console output W&B kept" in said
                                            for said in report.findings), report.findings
    assert report.progress.heldout and report.progress.metric.startswith("val-aux/"), report.progress.sentence()
    assert report.progress.state == "getting worse", report.progress.sentence()


def test_9_a_loops_lines_without_a_step_are_its_steps_in_order(hypotheses):
    """Tianshi-Xu's CS336 GRPO loop logs `rl_loss: ..., time: ..., l2_norm: ..., token_entropy: ..., reward_data:
    {'total_num': 256, 'total_reward': 144.0, ...}` once a step with no step on the line, and `rollout batch N done,
    eval_acc: x` every 10 steps: 200 steps, the reward a mean of its sum over its count (144 / 256 at the first), and
    the held-out accuracy rising 0.48 -> 0.70."""
    log = read_source(str(corpus("cs336tianshixu__rl_grpo_base")))
    assert len(log.series["reward"]) == 200 and log.series["reward"][0] == (1, 144 / 256)
    assert len(log.series["eval_acc"]) == 20 and log.series["eval_acc"][1][0] == 11
    report = triage(str(corpus("cs336tianshixu__rl_grpo_base")), hypotheses)
    assert report.progress.state == "learning" and report.progress.heldout, report.progress.sentence()
    assert not report.suspects(), report.ranking_record()


def test_13_a_reward_that_collapses_while_the_policy_samples_as_it_did_is_the_scorers(hypotheses):
    """open-rl's run19 on Tinker: the LLM judge died at step 15 and paid 0 from then on (the authors' README), so the
    training reward fell 0.54 -> 0.03 while the policy's entropy held (0.44 -> 0.41) and its samples barely moved (kl
    sample/train 3e-4 throughout). An update too large wrecks how the policy samples; this one did not, so the reward
    changed, not the policy: h13 ranks first, h16 is no suspect."""
    report = triage(str(corpus("openrl__run19").parent), hypotheses)
    suspects = [e.id for e in report.suspects()]
    assert suspects[:1] == ["h13"] and "h16" not in suspects, report.ranking_record()


def test_11_a_tied_share_read_on_its_first_rows_not_one_row_of_four_groups(hypotheses):
    """minimind-lab's r02c logs every 10th step over 4 groups: its first row ties 1 group in 4 (0.25), the next ones
    1.0 and 0.75, and 93 % on average (the authors: the degenerate groups left the advantage no signal). One row of
    four groups is no start: the ties are there from the first rows, so h11 is the suspect."""
    report = triage(str(corpus("minimindlab__r02c_math_grpo")), hypotheses)
    assert [e.id for e in report.suspects()][:1] == ["h11"], report.ranking_record()


def test_11_groups_that_tie_as_the_task_reward_collapses_are_the_collapses(hypotheses):
    """dphuang2's Tinker run at a learning rate of 5e-4: the correct share falls 0.36 -> 0 within a few steps and the
    groups tie from then on (92 % on average), all failing. The ties follow the collapse (h16, first), not prompts
    out of reach: h11 is no suspect."""
    report = triage(str(corpus("dphuang2__iter05_rl_matched")), hypotheses)
    suspects = [e.id for e in report.suspects()]
    assert suspects[:1] == ["h16"] and "h11" not in suspects, report.ranking_record()


def test_10_a_loops_advantage_std_says_most_groups_carry_an_advantage(hypotheses):
    """MiniMind's train_grpo_r1.py prints `Adv Std: 0.92` and no tied share or reward std: group-normalised
    advantages are 0 only in tied groups, so a batch std of 0.92 leaves at most 15 % of groups tied. The run (a 30M
    model at a learning rate of 1e-6, KL_ref ~0.002) is flat on its correctness: updates too small to move the
    policy, h26 (its README: "bounded by 30M capacity")."""
    log = derived(str(corpus("minimindtrainingpipeline__grpo_r1_500step")))
    assert statistics.median(v for _, v in log.series["advantages/std"]) == pytest.approx(0.925, abs=0.005)
    report = triage(str(corpus("minimindtrainingpipeline__grpo_r1_500step")), hypotheses)
    assert report.progress.state == "flat" and "advantages' std" in report.progress.verdict_why
    assert [e.id for e in report.suspects()][:1] == ["h26"], report.ranking_record()


def test_11_a_loops_zero_std_group_ratio_is_its_tied_share(hypotheses):
    """grpo-dapo-lab's metrics CSV counts its groups (n_groups, zero_std_groups) and logs their ratio,
    zero_std_group_ratio: TRL's frac_reward_zero_std (7 of 16 groups at the first step)."""
    log = derived(str(corpus("grpodapolab__a_grpo")))
    assert log.series["frac_reward_zero_std"][0] == (1, pytest.approx(7 / 16))


def test_11_a_loops_advantage_std_of_0_marks_a_step_where_every_group_tied(hypotheses):
    """RookWorld's loop prints `Advantages: ... std=0.000` at 20 of its 26 steps, while its rewards_std, the whole
    batch's, stays about 0.3 (its A: and P: tasks score 1.0 and 0.212): a group-relative advantage is 0 everywhere
    only where every group tied, so 20 of 26 steps tied whole."""
    log = derived(str(corpus("rookworldrlvr__mini_continuous_fixed")))
    assert statistics.fmean(v for _, v in log.series["reward_std"]) > 0.2
    assert last(log, "ties/whole_steps") == pytest.approx(20 / 26)


def test_13_groups_tied_while_the_batch_spreads_are_a_reward_that_scores_the_prompt(hypotheses):
    """RookWorld's scorer paid each kind of task a constant (every P: completion 0.212, every A: 1.0; the authors
    name and fix the bug): 8 sampled completions of a prompt always scored alike, different prompts differently.
    At 19 of its 26 steps the advantages are 0 everywhere while the batch's reward std is about 0.3, which names
    h13 first (the batch's spread still counts a little against it: it cannot tell a prompt's from a completion's)."""
    log = derived(str(corpus("rookworldrlvr__mini_continuous_fixed")))
    assert last(log, "ties/between_prompts_only") == pytest.approx(19 / 26)
    report = triage(str(corpus("rookworldrlvr__mini_continuous_fixed")), hypotheses)
    assert [entry.id for entry in report.suspects()][:1] == ["h13"], [(e.id, e.evidence) for e in report.ranking[:4]]


def test_18_a_kl_at_step_1_after_a_supervised_stage_in_the_same_notebook_is_no_wrong_reference(hypotheses):
    """grpo-hands-on's copy of Unsloth's Qwen3 (4B) notebook primes the format with SFT (a 23-row progress table
    without rewards), then trains GRPO on the same LoRA adapters (a 40-row table): its kl of 0.15 at step 1 is the
    SFT stage's distance from the reference (the adapters switched off), and the run learned. The report says so
    and h18 is no suspect."""
    report = triage(str(corpus("grpohandson__qwen3_4b_base_dapo_math")), hypotheses)
    assert any("23 logged steps without a reward" in found for found in report.findings), report.findings
    assert "h18" not in [e.id for e in report.suspects()], report.ranking_record()

"""What a test leaves in MLflow for the UI: model-training experiments whose artifacts follow the store,
runs that say what they are and who made them, dataset inputs, and the arms compared on the parent run.

Real MLflow SQLite stores, no training: the arms' streamed series are set by hand.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from hypotrack.definitions.models import Hypothesis
from hypotrack.mlflow_names import Tags
from hypotrack.protocol import ArmSpec
from hypotrack.run.arms import ArmState
from hypotrack.run.recording.ending import end_runs
from hypotrack.run.recording.mlflow_ui import view_key
from hypotrack.run.recording.records import (
    arm_description,
    compared_metrics,
    dataset_source,
    escape_markdown,
    log_outcome,
    log_plan,
    log_training_inputs,
    outcome_description,
    parent_description,
    spec_changes,
)
from hypotrack.tracking import MODEL_TRAINING, Tracker
from hypotrack.verdict import Verdict, not_applicable


def arm_spec(arm: str, seed: int, **changes) -> ArmSpec:
    fields = dict(hypothesis_id="h06", test_id="t1", arm=arm, seed=seed, trainer="grpo", experiment_name="toy_arith",
                  experiment_dir="/x", model="toy:arith", data={"task": "arith", "size": 512}, rewards=["m:r"],
                  reward_weights=None, grpo={"learning_rate": 5e-3, "beta": 0.0},
                  lora={"enabled": True, "r": 8, "lora_alpha": 16}, max_steps=3)
    fields.update(changes)
    return ArmSpec(**fields)


def treated(seed: int) -> ArmSpec:
    return arm_spec("treatment", seed, grpo={"learning_rate": 3e-4, "beta": 0.0}, lora={"enabled": False})


def hypothesis() -> Hypothesis:
    return Hypothesis.model_validate({
        "id": "h06", "title": "LoRA weight sync", "priority": "high", "experiment": "toy_arith",
        "statement": "The generator samples with stale weights: reference_column: <column> is *not* the policy.",
        "treatment": {"peft": False, "learning_rate": 3e-4},
        "criteria": {"validated": [{"metric": "diag/lora_sync/logp_gap_max", "arm": "control", "op": ">",
                                    "threshold": 1e-3}],
                     "invalidated": [{"metric": "diag/lora_sync/logp_gap_max", "arm": "control", "op": "<=",
                                      "threshold": 1e-3}]}})


@pytest.fixture(scope="module")
def tracker(tmp_path_factory) -> Tracker:
    return Tracker(f"sqlite:///{tmp_path_factory.mktemp('store') / 'mlflow.db'}")


def test_the_treatment_is_every_setting_it_changes_in_words() -> None:
    assert spec_changes(arm_spec("control", 0), treated(0)) == [
        "full fine-tuning instead of LoRA", "learning_rate 0.005 -> 0.0003"]
    planted = arm_spec("treatment", 0, plant=["lora_not_synced"], grpo={"learning_rate": 5e-3, "beta": 0.04})
    assert spec_changes(arm_spec("control", 0), planted) == ["beta 0 -> 0.04", "planted fault lora_not_synced"]
    assert spec_changes(arm_spec("control", 0), arm_spec("control", 1)) == []  # seeds are not settings


def test_runs_say_what_they_are() -> None:
    arms = [ArmState(spec=s, dir=Path("/x")) for s in (arm_spec("control", 0), treated(0))]
    control, treatment = (arm_description(hypothesis(), a.spec, arms) for a in arms)
    assert "**control** arm of h06 (LoRA weight sync), seed 0, test t1" in control and "as declared" in control
    assert "Changes from control: full fine-tuning instead of LoRA; learning_rate 0.005 -> 0.0003." in treatment
    plan = parent_description(hypothesis(), arms, "**Running**")
    assert plan.startswith("**Running**: h06 LoRA weight sync")
    assert "**Treatment**: full fine-tuning instead of LoRA; learning_rate 0.005 -> 0.0003." in plan
    verdict = Verdict(status="invalidated", confidence=0.75, summary="invalidated: signature absent")
    done = outcome_description(plan, verdict)
    headline, treatment, summary = done.split("\n\n")[:3]
    assert headline == "**Invalidated**, confidence 0.75: h06 LoRA weight sync"
    assert treatment.startswith("**Treatment**: full fine-tuning") and summary == "invalidated: signature absent"
    untrained = outcome_description(parent_description(hypothesis(), [], "**Running**"), verdict)
    assert untrained.startswith("**Invalidated**, confidence 0.75: h06 LoRA weight sync\n\nNo arm trained.")
    control_only = parent_description(hypothesis(), arms[:1], "**Running**")
    assert "the control arm, the mean over seeds" in control_only and "treatment" not in control_only.lower()
    reason = outcome_description(plan, not_applicable(["the run trains no LoRA adapter"]))
    assert reason.startswith("**Not applicable**: h06") and reason.count("the run trains no LoRA adapter") == 1


def test_text_from_the_user_reads_as_written_in_markdown() -> None:
    assert escape_markdown("reference_column: <column>, x < 0.5, *bold*, _em_") == (
        "reference_column: \\<column\\>, x \\< 0.5, \\*bold\\*, \\_em\\_")


def test_experiments_open_as_model_training_with_artifacts_beside_the_store(tracker: Tracker) -> None:
    experiment = tracker.client.get_experiment(tracker.experiment_id("hypotrack/h06"))
    assert experiment.tags[Tags.EXPERIMENT_KIND] == MODEL_TRAINING
    store = Path(tracker.uri.removeprefix("sqlite:///")).parent
    assert experiment.artifact_location == str(store / "mlruns" / "hypotrack" / "h06")
    plain = tracker.client.create_experiment("made elsewhere")  # an experiment hypotrack did not create
    assert tracker.experiment_id("made elsewhere") == plain
    assert tracker.client.get_experiment(plain).tags[Tags.EXPERIMENT_KIND] == MODEL_TRAINING


def test_runs_record_who_made_them_and_the_command(tracker: Tracker, monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", ["/venv/bin/hypotrack", "run", "h06", "--no-peft", "--output-dir", "/tmp/x/outputs"])
    run_id = tracker.create_run(tracker.experiment_id("hypotrack/h06"), "control-seed0", {Tags.ARM: "control"})
    tags = tracker.client.get_run(run_id).data.tags
    # the UI's Source column shows what follows the last "/": paths are cut to their last part
    assert tags[Tags.SOURCE_NAME] == "hypotrack run h06 --no-peft --output-dir outputs"
    assert tags["mlflow.user"] and tags["mlflow.source.type"] == "LOCAL" and tags[Tags.ARM] == "control"


def test_an_arm_lists_its_training_data_and_the_parent_gathers_them(tracker: Tracker) -> None:
    experiment_id = tracker.experiment_id("hypotrack/h06")
    parent = tracker.create_run(experiment_id, "test", {})
    arms = [tracker.create_run(experiment_id, f"control-seed{seed}", {}, parent) for seed in (0, 1)]
    for seed, run_id in enumerate(arms):
        log_training_inputs(tracker, run_id, arm_spec("control", seed), {
            "dataset_digest": f"digest{seed}", "dataset_rows": 512, "dataset_columns": ["prompt", "answer"],
            "model_source": "/cache/toy/arith"})
    run = tracker.client.get_run(arms[1])
    (item,) = run.inputs.dataset_inputs
    assert (item.dataset.name, item.dataset.digest, item.dataset.source_type) == ("toy-arith", "digest1", "code")
    assert json.loads(item.dataset.profile) == {"num_rows": 512, "columns": ["prompt", "answer"]}
    assert [(t.key, t.value) for t in item.tags] == [("mlflow.data.context", "train")]
    assert run.data.params["model_source"] == "/cache/toy/arith"
    tracker.gather_datasets(parent, arms + arms)
    assert sorted(i.dataset.digest for i in tracker.client.get_run(parent).inputs.dataset_inputs) == ["digest0", "digest1"]


def test_dataset_sources_use_mlflows_formats(tmp_path: Path) -> None:
    assert dataset_source({"dataset": "bdsaglam/musique-mini,answerable,train[:100]"}, 0) == (
        "bdsaglam/musique-mini/answerable", "hugging_face",
        {"path": "bdsaglam/musique-mini", "config_name": "answerable", "split": "train[:100]"})
    assert dataset_source({"dataset": str(tmp_path)}, 0) == (tmp_path.name, "local", {"uri": str(tmp_path)})
    assert dataset_source({"loader": "my_data:load"}, 2)[:2] == ("my_data:load", "code")


def test_a_test_is_one_view_of_its_arms_and_every_run_shows_the_verdict(tracker: Tracker, tmp_path: Path) -> None:
    experiment_id = tracker.experiment_id("hypotrack/h06")
    parent = tracker.create_run(experiment_id, "h06 test t1", {Tags.HYPOTHESIS: "h06", Tags.TEST: "t1", Tags.KIND: "test"})
    arms = []
    for spec, rewards in ((arm_spec("control", 0), [0.2, 0.4]), (arm_spec("control", 1), [0.4, 0.6]),
                          (treated(0), [0.5, 0.9]), (treated(1), [0.3, 0.7])):
        state = ArmState(spec=spec, dir=tmp_path / spec.key)
        state.run_id = tracker.create_run(experiment_id, spec.key, {Tags.ARM: spec.arm, Tags.KIND: "arm"}, parent)
        state.series["reward"] = list(enumerate(rewards))
        state.status, state.started, state.ended = "finished", 1_700_000_000.0 + spec.seed, 1_700_000_010.5 + spec.seed
        arms.append(state)
    (tmp_path / "h06.yaml").write_text("id: h06\n")
    log_plan(tracker, parent, hypothesis(), tmp_path / "h06.yaml", arms, "digest", {}, "python")

    experiment = tracker.client.get_experiment(experiment_id)
    assert experiment.tags[Tags.NOTE] == ("h06: LoRA weight sync\n\nThe generator samples with stale weights: "
                                          "reference_column: \\<column\\> is \\*not\\* the policy.")
    assert [tracker.client.get_run(a.run_id).info.run_name for a in arms] == ["ctrl s0", "ctrl s1", "treat s0", "treat s1"]
    planned = json.loads(experiment.tags[Tags.SHARED_VIEW + view_key("t1")])
    assert [chart["metricKey"] for chart in planned["compareRunCharts"]] == [
        "reward", "task_reward", "diag/lora_sync/logp_gap_max"]

    verdict = Verdict(status="invalidated", confidence=0.5, summary="invalidated: gap <= 0.001 on every seed",
                      headline="invalidated: logp_gap_max 0 <= 0.001")
    verdict.results = [type("Result", (), {"criterion": c, "as_json": lambda self: {}})()
                       for _, _, c in hypothesis().criteria.all_criteria()]
    assert compared_metrics(verdict) == {"outcome": ["reward", "task_reward"], "signature": ["diag/lora_sync/logp_gap_max"]}
    log_outcome(tracker, parent, arms, verdict, tmp_path / "out")
    end_runs(tracker, arms, parent, "finished")  # as the test's lifecycle ends them, in its finally
    for arm in arms:  # the verdict on every run, and each arm's own start and end
        run = tracker.client.get_run(arm.run_id)
        assert run.data.tags[Tags.VERDICT] == "invalidated"
        assert run.data.tags[Tags.HEADLINE] == "invalidated: logp_gap_max 0 <= 0.001"
        assert (run.info.status, run.info.start_time, run.info.end_time) == (
            "FINISHED", int(arm.started * 1000), int(arm.ended * 1000))
    view = json.loads(tracker.client.get_experiment(experiment_id).tags[Tags.SHARED_VIEW + view_key("t1")])
    assert view["groupBy"]["groupByKeys"] == [{"mode": "tag", "groupByData": Tags.ARM}]
    assert view["searchFilter"] == "tags.`hypotrack.test` = 't1' and tags.`hypotrack.kind` = 'arm'"
    assert [chart["metricKey"] for chart in view["compareRunCharts"]] == [
        "reward", "task_reward", "diag/lora_sync/logp_gap_max"]
    assert tracker.client.get_run(parent).info.run_name == "h06 invalidated t1"  # the verdict in the runs list
    description = tracker.client.get_run(parent).data.tags[Tags.NOTE]
    assert "gap \\<= 0.001 on every seed" in description  # the evidence, escaped
    assert not any(key.startswith("arms/") for key in tracker.client.get_run(parent).data.metrics)

    skipped = tracker.client.get_run(parent).data.tags
    assert skipped[Tags.VERDICT] == "invalidated"
    moot = not_applicable(["the run trains no LoRA adapter"])
    log_outcome(tracker, parent, [], moot, tmp_path / "out")
    assert tracker.client.get_run(parent).data.tags[Tags.VERDICT] == "not applicable"


def test_a_moved_store_shows_its_own_artifacts(tmp_path: Path) -> None:
    original = tmp_path / "project"
    original.mkdir()
    tracker = Tracker(f"sqlite:///{original / 'mlflow.db'}")
    run_id = tracker.create_run(tracker.experiment_id("hypotrack/h06"), "test", {})
    tracker.log_text(run_id, "written before the move", "note.txt")
    tracker.end(run_id, "FINISHED")
    moved = tmp_path / "elsewhere" / "project"
    moved.parent.mkdir()
    shutil.move(str(original), moved)

    tracker = Tracker(f"sqlite:///{moved / 'mlflow.db'}")  # opening the store relocates its artifact paths
    run = tracker.client.get_run(run_id)
    assert run.info.artifact_uri.startswith(str(moved / "mlruns" / "hypotrack" / "h06"))
    assert Path(tracker.client.download_artifacts(run_id, "note.txt")).read_text() == "written before the move"
    experiment = tracker.client.get_experiment(run.info.experiment_id)
    assert experiment.artifact_location == str(moved / "mlruns" / "hypotrack" / "h06")
    assert experiment.tags[Tags.STORE_DIR] == str(moved)


def test_a_test_whose_arms_do_not_apply_still_says_what_it_is(tracker: Tracker, tmp_path: Path) -> None:
    parent = tracker.create_run(tracker.experiment_id("hypotrack/h06"), "test", {})
    (tmp_path / "h06.yaml").write_text("id: h06\n")
    log_plan(tracker, parent, hypothesis(), tmp_path / "h06.yaml", [], "digest", {}, "python")  # nothing trains
    run = tracker.client.get_run(parent)
    assert run.data.params["experiment"] == "toy_arith" and run.data.params["treatment"] == "none"
    assert run.data.tags[Tags.NOTE].startswith("**Running**: h06 LoRA weight sync\n\nNo arm trained.")


RACE = """
import sys, time
from pathlib import Path
from hypotrack.tracking import Tracker
uri, barrier, me = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
(barrier / me).touch()
while len(list(barrier.iterdir())) < 2:  # both are past their imports: go at the same instant
    time.sleep(0.001)
tracker = Tracker(uri)
experiment = tracker.experiment_id("hypotrack/h01")
run = tracker.create_run(experiment, me, {})
tracker.log_dataset(run, "toy-arith", "f7bb45461c58b255", "code", {"task": "arith"}, 512)  # the same data, at once
print(experiment)
"""


def test_two_first_runs_racing_on_a_new_store_both_get_the_one_experiment_and_dataset(tmp_path: Path) -> None:
    """Two tests starting at once on a new SQLite store: MLflow's tables, the experiment and the dataset row
    they both log are each made once, and neither test fails."""
    import subprocess

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    racers = [subprocess.Popen([sys.executable, "-c", RACE, uri, str(barrier), name], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
    results = [racer.communicate(timeout=120) for racer in racers]
    assert all(racer.returncode == 0 for racer in racers), results
    assert results[0][0].strip() == results[1][0].strip() != "", results


def test_a_script_that_runs_other_settings_than_declared_keeps_both_and_is_warned_about(tracker: Tracker) -> None:
    """A command arm logs the experiment's declared settings when it starts and the trainer's own when the script
    builds it; MLflow refuses to change a param, so what the script ran goes beside the declared value."""
    from hypotrack.run.launching.workers import HANDLERS

    run_id = tracker.create_run(tracker.experiment_id("hypotrack/h06"), "control-seed0", {Tags.ARM: "control"})
    tracker.log_params(run_id, {"grpo.beta": 0.04, "grpo.learning_rate": 0.005})
    arm = ArmState(spec=arm_spec("control", 0), dir=Path("/x"), run_id=run_id)
    for _ in range(2):  # a second trainer in the same script: nothing refused, nothing logged twice
        HANDLERS["config"](arm, {"event": "config", "grpo": {"beta": 0.0, "learning_rate": 0.005}}, tracker)
    params = tracker.client.get_run(run_id).data.params
    assert (params["grpo.beta"], params["ran.grpo.beta"], params["grpo.learning_rate"]) == ("0.04", "0.0", "0.005")
    assert "ran.grpo.learning_rate" not in params
    assert arm.warnings[0] == ("the trainer ran with beta=0.0 where the experiment declares 0.04 (MLflow keeps both: "
                               "grpo.beta and ran.grpo.beta)")

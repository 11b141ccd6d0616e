"""Schedule workers over arms x seeds and turn their events into records.

Each arm's worker streams `Event`s (hypotrack.protocol); `HANDLERS` has one
handler per event kind, which updates the arm's state (what the progress display
and the verdict read) and logs to its MLflow run. How a worker starts (a local
process, `accelerate launch`, a Ray task) is the launcher's business
(run/launching/launchers.py); its events arrive in the arm's events.jsonl either way.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypotrack.mlflow_names import Tags
from hypotrack.protocol import Event, EventTail
from hypotrack.run.arms import ArmState, Display, Worker
from hypotrack.run.launching import base, launchers, signals
from hypotrack.run.launching.signals import check_stop
from hypotrack.run.recording.records import INTERESTING_GRPO, log_training_inputs, upload_arm

if TYPE_CHECKING:
    from hypotrack.tracking import Tracker

STOP_GRACE_SECONDS = 20


def run_workers(arms: list[ArmState], launch: base.LaunchOptions | str, parallel: int, tracker: Tracker,
                display: Display | None) -> None:
    """Run at most ``parallel`` workers at a time until every arm ended; raises Stop on SIGINT/SIGTERM,
    after stopping the workers."""
    launcher = launchers.open_launcher(launch)
    try:
        _schedule(arms, launcher, parallel, tracker, display)
    except BaseException:
        stop_all(arms, tracker)
        raise
    finally:
        launcher.close()


def _schedule(arms: list[ArmState], launcher: base.Launcher, parallel: int, tracker: Tracker,
              display: Display | None) -> None:
    queue = list(arms)
    running: list[ArmState] = []
    last_draw = 0.0
    while queue or running:
        check_stop()
        while queue and len(running) < parallel:
            arm = queue.pop(0)
            arm.dir.mkdir(parents=True, exist_ok=True)
            spec_path = arm.dir / "spec.json"
            spec_path.write_text(arm.spec.model_dump_json(indent=1))
            events = arm.dir / "events.jsonl"
            events.unlink(missing_ok=True)
            arm.tail = EventTail(events)
            arm.process = _start(launcher, arm, spec_path, events)
            arm.status, arm.started = "starting", time.time()
            running.append(arm)
        time.sleep(0.2)
        check_stop()
        for arm in list(running):
            drain(arm, tracker)
            code = arm.process.poll()
            if code is None:
                continue
            drain(arm, tracker)
            arm.ended = time.time()
            running.remove(arm)
            if not arm.done:
                arm.status = "failed"
                arm.error = arm.error or _no_result(arm, code)
            elif arm.status == "finished" and code != 0:
                arm.status, arm.error = "failed", f"worker exited with code {code} after training ({_log_tail(arm)})"
            upload_arm(tracker, arm.run_id, arm.dir)
        if display and time.time() - last_draw > 0.25:
            display(arms)
            last_draw = time.time()
    if display:
        display(arms)


def _start(launcher: base.Launcher, arm: ArmState, spec_path: Path, events: Path) -> Worker:
    if arm.spec.command:  # a command experiment: the user's own command, instrumented from outside
        from hypotrack.run.launching.command_launch import start_command

        return start_command(arm.spec, spec_path, events, arm.dir / "worker.log", arm.spec.threads)
    return launcher.start(spec_path, events, arm.dir / "worker.log", arm.spec.threads)


def _no_result(arm: ArmState, code: int) -> str:
    """Why an arm whose process ended sent no result."""
    if not arm.spec.command:
        return f"worker exited with code {code} without a result ({_log_tail(arm)})"
    if code == 0 and not arm.configured:
        return ("the command finished without creating a GRPOTrainer: hypotrack's diagnostics attach to the "
                "GRPOTrainer (or subclass) the script builds; check that the command trains with TRL's GRPOTrainer "
                f"({_log_tail(arm)})")
    return f"the command exited with code {code}: {_log_tail(arm, 5)}"


def stop_all(arms: list[ArmState], tracker: Tracker) -> None:
    """Stop every live worker (SIGTERM, or a Ray cancel), wait, then kill stragglers; record what came in."""
    signals.ignore()  # a second Ctrl-C while we clean up must not leave runs open
    live = [a for a in arms if a.process is not None and a.process.poll() is None]
    for arm in live:
        arm.process.terminate()
    deadline = time.time() + STOP_GRACE_SECONDS
    for arm in live:
        try:
            arm.process.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            arm.process.terminate(signal.SIGKILL)
            arm.process.wait()
    for arm in arms:
        if not arm.done:
            drain(arm, tracker)
            arm.status, arm.ended = "killed", time.time()
            arm.error = arm.error or "stopped"


def drain(arm: ArmState, tracker: Tracker) -> None:
    if arm.tail is None:
        return
    for event in arm.tail.read():
        HANDLERS[event["event"]](arm, event, tracker)


# ------------------------------------------------------------------ one handler per event kind


def _started(arm: ArmState, event: dict[str, Any], tracker: Tracker) -> None:
    arm.status = "running"
    tracker.set_tags(arm.run_id, {f"version.{k}": v for k, v in (event.get("versions") or {}).items()})


def _phase(arm: ArmState, event: dict[str, Any], tracker: Tracker) -> None:
    arm.phase = str(event.get("text", ""))


def _config(arm: ArmState, event: dict[str, Any], tracker: Tracker) -> None:
    arm.phase = ""  # the trainer is built: training starts
    arm.configured = True
    grpo = event.get("grpo") or {}
    changed = tracker.log_params(arm.run_id, {f"grpo.{k}": v for k, v in grpo.items() if k in INTERESTING_GRPO})
    for key, (declared, ran) in sorted(changed.items()):  # a user's script that does not run what the experiment says
        _warning(arm, {"message": f"the trainer ran with {key.removeprefix('grpo.')}={ran} where the experiment "
                                  f"declares {declared} (MLflow keeps both: {key} and ran.{key})"}, tracker)
    tracker.log_dict(arm.run_id, grpo, "resolved/grpo_config.json")
    arm.inferred = dict(event.get("inferred") or {})
    tracker.set_tags(arm.run_id, {Tags.TRAINABLE_PARAMETERS: event.get("trainable_parameters"),
                                  Tags.DATASET_ROWS: event.get("dataset_rows"),
                                  **({Tags.INFERRED: "\n".join(arm.inferred.values())} if arm.inferred else {})})
    log_training_inputs(tracker, arm.run_id, arm.spec, event)


def _params(arm: ArmState, event: dict[str, Any], tracker: Tracker) -> None:
    tracker.log_params(arm.run_id, event.get("params") or {})


def _record_metrics(arm: ArmState, event: dict[str, Any], tracker: Tracker) -> None:
    arm.phase = ""
    step = int(event.get("step", 0))
    metrics = event.get("metrics") or {}
    tracker.log_metrics(arm.run_id, metrics, step)
    for key, value in metrics.items():
        arm.series.setdefault(key, []).append((step, float(value)))
    arm.step = step
    if "reward" in metrics:
        arm.reward = float(metrics["reward"])


def _reward_errors(arm: ArmState, event: dict[str, Any], tracker: Tracker) -> None:
    arm.reward_errors = dict(event.get("total") or {})
    tracker.set_tags(arm.run_id, {Tags.REWARD_ERRORS: json.dumps(event.get("first_message"))})


def _warning(arm: ArmState, event: dict[str, Any], tracker: Tracker) -> None:
    arm.warnings.append(str(event.get("message", "")))
    tracker.set_tags(arm.run_id, {Tags.WARNINGS: "\n".join(arm.warnings)[-5000:]})


def _finished(arm: ArmState, event: dict[str, Any], tracker: Tracker) -> None:
    # Final figures a trainer returns without streaming them (critic before/after parity,
    # parity probes) are logged once, at the last step.
    final = {k: v for k, v in (event.get("metrics") or {}).items()
             if k not in arm.series and isinstance(v, (int, float))}
    if final:
        tracker.log_metrics(arm.run_id, final, arm.step)
        for key, value in final.items():
            arm.series[key] = [(arm.step, float(value))]
    arm.status = "finished"


def _failed(arm: ArmState, event: dict[str, Any], tracker: Tracker) -> None:
    arm.status, arm.error = "failed", str(event.get("error", "failed"))
    tracker.set_tags(arm.run_id, {Tags.ERROR: arm.error[:5000]})


def _killed(arm: ArmState, event: dict[str, Any], tracker: Tracker) -> None:
    arm.status, arm.error = "killed", str(event.get("reason", "killed"))


HANDLERS: dict[Event, Callable[[ArmState, dict[str, Any], Any], None]] = {
    Event.STARTED: _started, Event.PHASE: _phase, Event.CONFIG: _config, Event.PARAMS: _params,
    Event.METRICS: _record_metrics, Event.REWARD_ERRORS: _reward_errors, Event.WARNING: _warning,
    Event.FINISHED: _finished, Event.FAILED: _failed, Event.KILLED: _killed,
}


def _log_tail(arm: ArmState, lines: int = 3) -> str:
    log = arm.dir / "worker.log"
    if not log.exists():
        return "no log"
    tail = [line for line in log.read_text(errors="replace").splitlines() if line.strip()][-lines:]
    return " | ".join(tail)[-150 * lines:] or "empty log"

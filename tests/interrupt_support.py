"""The interrupt matrix (tests/test_interrupt_matrix.py): real signals to real `hypotrack run` processes.

Each trial starts one or two `hypotrack run h01` (same registry, same MLflow store, own --output-dir),
sends SIGINT, SIGTERM or SIGKILL to a runner or to a training worker once its arms reached a random
step 1..4, waits for everything to end, runs `hypotrack status` (which reconciles dead runs), lets the
detached MLflow closer settle, and records what it sees in an `Observation`. `problems` turns an
observation into the list of broken promises (empty when the trial passed).

Trials are independent (own folder, registry, MLflow store), so `TrialPool` runs a few at a time
in threads: one trial alone leaves a core idle while its runner starts and stops. Every choice a
trial makes (the step, which run or arm is hit, the stagger between two runs) comes from
`random.Random(trial.seed)`, printed with every failure; HYPOTRACK_INTERRUPT_SEED shifts all seeds,
HYPOTRACK_INTERRUPT_PARALLEL sets how many trials run at once. A runner that hangs is sent SIGABRT
before it is killed, so its output ends with every thread's stack (PYTHONFAULTHANDLER).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import threading
import time
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from runner_support import REPO, alive, cli, env_for, mlflow_runs, registry_rows, start_cli

HYPOTHESIS = "h01"
REPO_EXPERIMENTS = REPO / "experiments"
# Small runs as in test_runner_faults. A run that is never interrupted (the other run of a double
# trial, the surviving arm of a killed worker) trains MAX_STEPS to its end, so MAX_STEPS stays modest,
# yet far above the step 1..4 where interrupts land plus the poll's lag: on a quiet machine the toy trains 16
# steps in about a second, which a SIGKILL sent after the poll saw step 1 could miss, and a worker forked
# from the forkserver reaches its first step within a second of starting.
MAX_STEPS = 120
COMMON = ["--seeds", "1", "--batch-size", "8", "--num-generations", "4", "--parallel", "2",
          "--max-steps", str(MAX_STEPS)]
# Most runs train the control arm alone (one worker): a worker's start costs ~12 CPU-seconds (imports), and
# 30 trials, 12 of them with two runs, must fit in ~8 minutes on 2 cores. The first single-run trial of each
# signal sent to a worker trains both arms (two workers, --parallel 2): the killed worker's arm must end
# FAILED or KILLED while the other trains on and ends FINISHED. (test_runner_faults already stops runners
# of two-arm runs with each signal.)
TWO_ARMS: set[tuple[str, str, int]] = {("single", "worker", 0)}  # (mode, target, repetition)


def arms_for(trial: Trial) -> tuple[str, ...]:
    return ("control", "treatment") if (trial.mode, trial.target, trial.rep) in TWO_ARMS else ("control",)


TRAIN_METRIC = "loss"  # logged by every training step of every arm
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
TARGETS = ("runner", "worker")
MODES = ("single", "double")
SETTLE_SECONDS = 60.0


def tail(output: str, chars: int) -> str:
    """The end of a runner's output without faulthandler's "Extension modules:" line, which would fill the tail
    and hide the thread stacks of a runner that hung."""
    kept = [line for line in output.splitlines() if not line.startswith("Extension modules:")]
    return "\n".join(kept)[-chars:]


def trial_seed(trial_id: str) -> int:
    """A trial's random choices come from its id, shifted by HYPOTRACK_INTERRUPT_SEED."""
    return zlib.crc32(trial_id.encode()) + int(os.environ.get("HYPOTRACK_INTERRUPT_SEED", "0"))


@dataclass(frozen=True)
class Trial:
    sig: signal.Signals
    target: str  # runner | worker
    mode: str  # single: one run | double: two concurrent runs of the same hypothesis
    rep: int

    @property
    def id(self) -> str:
        return f"{self.sig.name.lower()}-{self.target}-{self.mode}-{self.rep}"

    @property
    def seed(self) -> int:
        return trial_seed(self.id)


REPETITIONS = {"single": 3, "double": 2}  # 6 x 3 + 6 x 2 = 30 trials


def matrix() -> list[Trial]:
    """Signals x targets x modes (12 combinations), each repeated; the cheaper single runs get the extra
    repetition. Ordered repetition by repetition, so the trials a pool runs at once mix kinds."""
    return [Trial(sig, target, mode, rep)
            for rep in range(max(REPETITIONS.values()))
            for sig in SIGNALS for target in TARGETS for mode in MODES
            if rep < REPETITIONS[mode]]


# ------------------------------------------------------------------ what a trial records


@dataclass
class RunRecord:
    name: str  # a | b
    out: Path
    arms: tuple[str, ...]
    runner_sig: signal.Signals | None = None  # the signal sent to the runner, if any
    victims: dict[str, signal.Signals] = field(default_factory=dict)  # arm -> signal sent to its worker
    step: int = 0  # the step every arm had reached when the signal went
    pid: int = 0
    rc: int | None = None
    output: str = ""
    test_id: str = ""
    worker_pids: dict[str, int] = field(default_factory=dict)  # arm -> pid
    events: dict[str, list[dict]] = field(default_factory=dict)  # arm -> its events.jsonl
    peer_running: bool | None = None  # double trials: the other run was `running` when the signal went
    early_exit: bool = False  # the runner ended on its own before its signal could be sent (then none was)

    @property
    def interrupted(self) -> bool:
        return self.runner_sig is not None or bool(self.victims)

    def describe(self) -> str:
        what = [f"{self.runner_sig.name} to runner"] if self.runner_sig is not None else []
        what += [f"{sig.name} to {arm} worker" for arm, sig in self.victims.items()]
        if self.early_exit:
            plan = f"ended on its own before step {self.step}, so no signal was sent"
        elif what:
            plan = ", ".join(what) + f" once every arm reached step {self.step}"
        else:
            plan = "not interrupted"
        reached = {arm: max(event_steps(events), default=0) for arm, events in self.events.items()}
        peer = "" if self.peer_running is None else f" (the other run was {'' if self.peer_running else 'no longer '}running)"
        return (f"run {self.name} (test {self.test_id or '?'}, arms {','.join(self.arms)}): {plan}{peer}; "
                f"last steps written {reached}; exit code {self.rc}")


@dataclass
class Observation:
    trial: Trial
    tmp: Path
    runs: list[RunRecord] = field(default_factory=list)
    error: str = ""  # the trial could not be carried out (harness problem or a hang)
    status_rc: int | None = None
    status_output: str = ""
    settle_seconds: float = 0.0
    settled: bool = False
    hypotheses: list[tuple] = field(default_factory=list)  # hypothesis_state (id, status)
    test_runs: list[dict] = field(default_factory=list)
    mlflow: list[dict] = field(default_factory=list)  # run_id, kind, test, arm, status, steps of TRAIN_METRIC
    before: set[tuple[str, str, int]] = field(default_factory=set)  # (run, key, step) logged before the signals
    after: set[tuple[str, str, int]] = field(default_factory=set)
    integrity: dict[str, str] = field(default_factory=dict)
    live_pids: list[int] = field(default_factory=list)
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)  # seconds since the trial began, for tuning

    def mark(self, phase: str, since: float) -> None:
        self.phases[phase] = round(time.time() - since, 1)

    def header(self) -> str:
        t = self.trial
        base = os.environ.get("HYPOTRACK_INTERRUPT_SEED", "0")
        lines = [(f"trial {t.id} seed={t.seed} (rerun: HYPOTRACK_INTERRUPT_SEED={base} python -m pytest "
                  f"tests/test_interrupt_matrix.py -k {t.id}) in {self.tmp}, {self.seconds:.0f}s")]
        lines += ["  " + run.describe() for run in self.runs]
        return "\n".join(lines)


# ------------------------------------------------------------------ processes the pool must be able to stop

_LIVE: set[int] = set()
_LIVE_LOCK = threading.Lock()
_MLFLOW_LOCK = threading.Lock()  # MlflowClient reads from several trial threads: one at a time


def _track(pid: int) -> None:
    with _LIVE_LOCK:
        _LIVE.add(pid)


def _ours(pid: int) -> bool:
    """Still a hypotrack process (a pid of ours may have been reused by then)."""
    try:
        return b"hypotrack" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def kill_leftovers() -> None:
    with _LIVE_LOCK:
        pids = list(_LIVE)
    for pid in pids:
        if alive(pid) and _ours(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class _Runner:
    """A `hypotrack run` whose output is read as it comes (a full pipe must never block the runner)."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.process = start_cli(args, env, cwd)
        _track(self.process.pid)
        self.chunks: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        # bytes, decoded leniently: a reader that died on odd output would leave the runner blocked on a full pipe
        for chunk in iter(lambda: self.process.stdout.buffer.read1(65536), b""):
            self.chunks.append(chunk.decode("utf-8", errors="replace"))

    def wait(self, timeout: float) -> int:
        code = self.process.wait(timeout=timeout)
        self.reader.join(timeout=10)
        return code

    @property
    def output(self) -> str:
        return "".join(self.chunks)


# ------------------------------------------------------------------ reading the stores


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, timeout=30)


def metric_points(tmp: Path) -> set[tuple[str, str, int]]:
    db = tmp / "mlflow.db"
    if not db.exists():
        return set()
    con = _connect(db)
    try:
        return {(r, k, int(s)) for r, k, s in con.execute("select run_uuid, key, step from metrics")}
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return set()
        raise
    finally:
        con.close()


def mlflow_statuses(tmp: Path) -> list[str]:
    db = tmp / "mlflow.db"
    if not db.exists():
        return []
    con = _connect(db)
    try:
        return [row[0] for row in con.execute("select status from runs")]
    finally:
        con.close()


def integrity(path: Path) -> str:
    if not path.exists():
        return "missing"
    con = _connect(path)
    try:
        return "; ".join(str(row[0]) for row in con.execute("pragma integrity_check"))
    finally:
        con.close()


def read_events(path: Path) -> list[dict]:
    events = []
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                events.append({"event": "unreadable", "line": line[:200]})
    return events


def event_steps(events: list[dict], key: str = TRAIN_METRIC) -> set[int]:
    return {int(e["step"]) for e in events if e.get("event") == "metrics" and key in (e.get("metrics") or {})}


def progress(outputs: Path) -> tuple[dict[str, int], dict[str, int]]:
    """({arm dir: worker pid}, {arm dir: last step logged}) of the arms that started (as wait_for_step reads them)."""
    pids: dict[str, int] = {}
    steps: dict[str, int] = {}
    for events in outputs.glob("*/*/events.jsonl"):
        for event in read_events(events):
            if event.get("event") == "started":
                pids[events.parent.name] = event["pid"]
            if event.get("event") == "metrics":
                steps[events.parent.name] = max(steps.get(events.parent.name, 0), event["step"])
    return pids, steps


def _test_dir(out: Path) -> Path | None:
    found = sorted(out.glob(f"{HYPOTHESIS}-*"))
    return found[0] if found else None


def _wait_until(predicate, timeout: float, every: float = 0.3) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return bool(predicate())


# ------------------------------------------------------------------ one trial


def run_trial(trial: Trial, tmp: Path, cache: Path, template: Path | None = None) -> Observation:
    obs = Observation(trial, tmp)
    started = time.time()
    runners: dict[str, _Runner] = {}
    try:
        if template is not None:
            shutil.copy(template, tmp / "mlflow.db")
        _carry_out(trial, tmp, cache, obs, runners)
    except Exception as exc:  # noqa: BLE001 - recorded, reported by the test
        obs.error = f"{type(exc).__name__}: {exc}"
        for runner in runners.values():
            if isinstance(exc, (TimeoutError, subprocess.TimeoutExpired)) and runner.process.poll() is None:
                # hung: faulthandler (PYTHONFAULTHANDLER) prints every thread's stack into the output
                runner.process.send_signal(signal.SIGABRT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    runner.wait(timeout=10)
    finally:
        for name, runner in runners.items():
            if runner.process.poll() is None:
                runner.process.kill()
                runner.process.wait()
            for run in obs.runs:
                if run.name == name and not run.output:
                    runner.reader.join(timeout=5)
                    run.output = runner.output
        obs.seconds = time.time() - started
    return obs


def _carry_out(trial: Trial, tmp: Path, cache: Path, obs: Observation, runners: dict[str, _Runner]) -> None:
    rng = random.Random(trial.seed)
    t0 = time.time()
    env = {**env_for(tmp, cache), "PYTHONFAULTHANDLER": "1"}  # a hung runner can be made to show its stack
    step = rng.randint(1, 4)
    names = ["a"] if trial.mode == "single" else ["a", "b"]
    hit = names if trial.mode == "single" else rng.choice([["a"], ["b"], ["a", "b"]])
    stagger = rng.uniform(0.0, 1.5)
    runs = {name: RunRecord(name, tmp / f"out-{name}", arms_for(trial)) for name in names}
    for name in hit:
        run = runs[name]
        run.step = step
        if trial.target == "runner":
            run.runner_sig = trial.sig
        else:
            run.victims = {rng.choice(run.arms): trial.sig}
    obs.runs = list(runs.values())

    for i, (name, run) in enumerate(runs.items()):
        if i:
            time.sleep(stagger)
        arms = [] if run.arms == ("control", "treatment") else ["--arms", ",".join(run.arms)]
        runners[name] = _Runner(["run", HYPOTHESIS, *COMMON, *arms, "--output-dir", str(run.out)], env, tmp)
        run.pid = runners[name].process.pid

    pending, deadline = list(hit), time.time() + 300
    while pending:  # each hit run is interrupted as soon as all its arms reached the step
        for name in list(pending):
            run = runs[name]
            pids, steps = progress(run.out)
            if len(pids) < len(run.arms) or any(steps.get(arm_dir, 0) < step for arm_dir in pids):
                if runners[name].process.poll() is not None:  # it ended on its own: a finding, not a harness error
                    run.early_exit = True
                    run.runner_sig, run.victims = None, {}  # nothing was sent: judged as a run left alone
                    pending.remove(name)
                    obs.mark(f"run {name} ended before the signal", t0)
                continue
            pending.remove(name)
            for pid in pids.values():
                _track(pid)
            # The run's workers are held still (SIGSTOP) from the step the signal is due at until it is sent, and let
            # go after (SIGCONT; a signal sent to a stopped worker waits for it, except SIGKILL, which ends it): a seed
            # whose policy collapses to empty completions trains all MAX_STEPS in about 2 s, while reading the stores
            # below takes a second or more, and the signal would land on a worker that had finished.
            _signal_all(pids.values(), signal.SIGSTOP)
            if run.runner_sig == signal.SIGKILL:
                # the runner logs what it read every 0.2 s: let it log a training step, so that there is something
                # whose survival can be checked
                _wait_until(lambda run=run: _logged_steps(tmp, run) >= 1, 20, 0.1)
            obs.before |= metric_points(tmp)
            if trial.mode == "double":
                count = registry_rows(tmp / "registry.db", "select count(*) from test_run where state='running'")
                run.peer_running = bool(count) and count[0][0] >= 2
            if run.runner_sig is not None:
                os.kill(run.pid, run.runner_sig)  # not yet waited for: at worst a zombie, never another process
            for arm, sig in run.victims.items():
                try:
                    os.kill(pids[f"{arm}-seed0"], sig)
                except ProcessLookupError:  # it ended first: the checks then find the arm finished or failed
                    obs.mark(f"{arm} worker of run {name} gone before its signal", t0)
            # let them go: each takes the signal sent to it, or the SIGTERM a SIGKILLed runner's death sends it
            # (PR_SET_PDEATHSIG), as it would have running
            _signal_all(pids.values(), signal.SIGCONT)
            obs.mark(f"signal {name}", t0)
        if pending and time.time() > deadline:
            raise TimeoutError(f"runs {pending} did not reach step {step} in 300s")
        time.sleep(0.15)

    for name, run in runs.items():
        # interrupted runners stop in seconds; the others train to MAX_STEPS
        run.rc = runners[name].wait(timeout=120 if run.runner_sig is not None else 400)
        run.output = runners[name].output
        test_dir = _test_dir(run.out)
        if test_dir is not None:
            run.test_id = test_dir.name.split("-", 1)[1]
            for arm in run.arms:
                run.events[arm] = read_events(test_dir / f"{arm}-seed0" / "events.jsonl")
                started_events = [e for e in run.events[arm] if e.get("event") == "started"]
                if started_events:
                    run.worker_pids[arm] = int(started_events[0]["pid"])
                    _track(run.worker_pids[arm])

    obs.mark("runners ended", t0)
    # A SIGKILLed runner's workers get SIGTERM from the kernel (PR_SET_PDEATHSIG) and end on their own.
    pids = [pid for run in runs.values() for pid in run.worker_pids.values()]
    _wait_until(lambda: not any(alive(pid) for pid in pids), 60)
    obs.live_pids = [pid for pid in [*pids, *(run.pid for run in runs.values())] if alive(pid)]
    # re-read events: a worker of a SIGKILLed runner writes its `killed` event after the runner is gone
    for run in runs.values():
        test_dir = _test_dir(run.out)
        if test_dir is not None:
            for arm in run.arms:
                run.events[arm] = read_events(test_dir / f"{arm}-seed0" / "events.jsonl")

    status = cli(["status", "--json"], env, tmp, timeout=120)  # reconciles dead runs, starts the MLflow closer
    obs.status_rc, obs.status_output = status.returncode, status.stdout[-2000:] + status.stderr[-4000:]
    obs.mark("status", t0)

    begin = time.time()
    obs.settled = _wait_until(lambda: _settled(tmp), SETTLE_SECONDS, 0.5)
    obs.settle_seconds = time.time() - begin
    obs.mark("settled", t0)
    _observe(tmp, obs)
    obs.mark("observed", t0)


def _signal_all(pids, sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # a worker that already ended
            os.kill(pid, sig)


def _logged_steps(tmp: Path, run: RunRecord) -> int:
    """How many training steps of this run's arms the runner has logged to MLflow (the fewest over its arms)."""
    test_dir = _test_dir(run.out)
    if test_dir is None:
        return 0
    test_id = test_dir.name.split("-", 1)[1]
    ids = registry_rows(tmp / "registry.db", f"select mlflow_run_ids from test_run where id='{test_id}'")
    if not ids or not ids[0][0]:
        return 0
    run_ids = list(json.loads(ids[0][0]).values())
    points = metric_points(tmp)
    return min(len({s for r, k, s in points if r == rid and k == TRAIN_METRIC and s >= 1}) for rid in run_ids)


def _settled(tmp: Path) -> bool:
    closed = registry_rows(tmp / "registry.db", "select state, mlflow_closed from test_run")
    return (all(state != "running" and flag for state, flag in closed)
            and all(status not in ("RUNNING", "SCHEDULED") for status in mlflow_statuses(tmp)))


def _observe(tmp: Path, obs: Observation) -> None:
    from mlflow import MlflowClient

    db = tmp / "registry.db"
    obs.hypotheses = registry_rows(db, "select id, status from hypothesis_state")
    columns = ["id", "state", "verdict", "pid", "mlflow_closed", "mlflow_parent_run_id", "mlflow_run_ids", "error"]
    obs.test_runs = [dict(zip(columns, row)) for row in registry_rows(db, f"select {', '.join(columns)} from test_run")]
    with _MLFLOW_LOCK:
        client = MlflowClient(f"sqlite:///{tmp / 'mlflow.db'}")
        for run in mlflow_runs(tmp):
            tags = run.data.tags
            steps = sorted(int(m.step) for m in client.get_metric_history(run.info.run_id, TRAIN_METRIC))
            obs.mlflow.append({"run_id": run.info.run_id, "kind": tags.get("hypotrack.kind"),
                               "test": tags.get("hypotrack.test"), "arm": tags.get("hypotrack.arm"),
                               "status": run.info.status, "steps": steps})
    obs.after = metric_points(tmp)
    obs.integrity = {"registry.db": integrity(db), "mlflow.db": integrity(tmp / "mlflow.db")}


# ------------------------------------------------------------------ what must hold


def problems(obs: Observation) -> list[str]:
    """Every promise the trial broke, in words; [] when it held them all."""
    found: list[str] = []
    if obs.error:
        return [f"the trial did not complete: {obs.error}"] + [
            f"run {run.name} output (tail):\n{tail(run.output, 6000)}" for run in obs.runs]
    trial = obs.trial
    # 4. the stores are intact
    for name, result in obs.integrity.items():
        if result != "ok":
            found.append(f"PRAGMA integrity_check on {name}: {result}")
    # processes
    if obs.live_pids:
        found.append(f"processes still alive after the trial: {obs.live_pids}")
    if obs.status_rc != 0 or "Traceback" in obs.status_output:
        found.append(f"`hypotrack status` exit code {obs.status_rc}: {obs.status_output[-800:]}")
    if any(run.runner_sig == signal.SIGKILL for run in obs.runs) and "had died" not in obs.status_output:
        found.append("`hypotrack status` did not report the SIGKILLed runner's test run as dead")
    if not obs.settled:
        found.append(f"MLflow runs / registry not closed {SETTLE_SECONDS:.0f}s after `hypotrack status`")
    # 1. nothing stays testing / running
    testing = [h for h, status in obs.hypotheses if status == "testing"]
    if testing:
        found.append(f"hypotheses left `testing`: {testing} (test runs: "
                     f"{[(t['id'], t['state'], t['verdict']) for t in obs.test_runs]})")
    running = [t["id"] for t in obs.test_runs if t["state"] == "running"]
    if running:
        found.append(f"test runs left `running` with their processes dead: {running}")
    if len(obs.test_runs) != len(obs.runs):
        found.append(f"{len(obs.runs)} runs started, {len(obs.test_runs)} test runs recorded")
    verdicts = {t["verdict"] for t in obs.test_runs if t["verdict"]}
    status = dict(obs.hypotheses).get(HYPOTHESIS)
    if not verdicts and status != "pending":
        found.append(f"{HYPOTHESIS} is {status!r} after only interrupted tests; expected back to 'pending'")
    if verdicts and status not in verdicts:
        found.append(f"{HYPOTHESIS} is {status!r}; expected one of the verdicts {sorted(verdicts)}")
    by_test = {t["id"]: t for t in obs.test_runs}
    for run in obs.runs:
        found += _run_problems(trial, obs, run, by_test.get(run.test_id))
    # 2. (all runs) none stays RUNNING
    for m in obs.mlflow:
        if m["status"] not in ("FINISHED", "FAILED", "KILLED"):
            found.append(f"MLflow {m['kind']} run {m['run_id']} ({m['arm'] or 'parent'}) is {m['status']}")
    # 3. nothing logged before the signals was lost
    lost = obs.before - obs.after
    if lost:
        found.append(f"{len(lost)} metric points logged before the interrupt are gone, e.g. {sorted(lost)[:3]}")
    return found


def _run_problems(trial: Trial, obs: Observation, run: RunRecord, record: dict | None) -> list[str]:
    found: list[str] = []
    where = f"run {run.name}"
    if run.early_exit:
        found.append(f"{where}: the runner ended on its own (exit code {run.rc}) before its interrupt; output tail:\n"
                     f"{tail(run.output, 1500)}")
    if "Traceback" in run.output:
        found.append(f"{where}: traceback in the runner's output:\n{tail(run.output, 3000)}")
    if record is None:
        return found + [f"{where}: no test run recorded (test id {run.test_id!r})"]
    # exit code and registry state
    if run.runner_sig in (signal.SIGINT, signal.SIGTERM):
        expect_rc, expect_state = 130, "killed"
    elif run.runner_sig == signal.SIGKILL:
        expect_rc, expect_state = -signal.SIGKILL, "killed"
    elif run.victims:
        expect_rc, expect_state = 1, "failed"
    else:
        expect_rc, expect_state = 0, "finished"
    if run.rc != expect_rc:
        found.append(f"{where}: exit code {run.rc}, expected {expect_rc}" + (
            "" if run.early_exit else f"; output tail:\n{tail(run.output, 1500)}"))
    if record["state"] != expect_state:
        found.append(f"{where}: test run state {record['state']!r}, expected {expect_state!r} ({record['error']})")
    if run.victims and record["verdict"] != "inconclusive":
        found.append(f"{where}: verdict {record['verdict']!r} after a worker was killed; expected 'inconclusive'")
    if run.runner_sig == signal.SIGKILL and record["mlflow_closed"] != 1:
        found.append(f"{where}: the dead runner's MLflow runs were never marked closed in the registry")
    # MLflow statuses: FINISHED only for what really finished
    mine = [m for m in obs.mlflow if m["test"] == run.test_id]
    parents = [m for m in mine if m["kind"] == "test"]
    arms = {m["arm"]: m for m in mine if m["kind"] == "arm"}
    if len(parents) != 1 or set(arms) != set(run.arms):
        found.append(f"{where}: MLflow has parents {len(parents)} and arms {sorted(arms)}; expected 1 and "
                     f"{list(run.arms)}")
    for parent in parents:
        if run.interrupted and parent["status"] not in ("KILLED", "FAILED"):
            found.append(f"{where}: MLflow parent run {parent['run_id']} is {parent['status']} although the test "
                         f"was interrupted")
        if not run.interrupted and parent["status"] != "FINISHED":
            found.append(f"{where}: MLflow parent run of an uninterrupted test is {parent['status']}")
        if run.runner_sig is not None and parent["status"] != "KILLED":
            found.append(f"{where}: MLflow parent run is {parent['status']}; expected KILLED")
    for arm, m in arms.items():
        events = run.events.get(arm, [])
        kinds = [e.get("event") for e in events]
        really_finished = "finished" in kinds
        cut = run.runner_sig is not None or arm in run.victims
        if cut and really_finished:
            found.append(f"{where}: the {arm} arm finished training before the interrupt landed (timing of the "
                         f"harness, not a hypotrack bug): raise MAX_STEPS")
            continue
        if m["status"] == "FINISHED" and not really_finished:
            found.append(f"{where}: MLflow {arm} run {m['run_id']} is FINISHED but its worker never finished "
                         f"(events: {kinds[-3:]})")
        if cut and m["status"] not in ("KILLED", "FAILED"):
            found.append(f"{where}: MLflow {arm} run {m['run_id']} is {m['status']}; its training was interrupted")
        if not cut and really_finished and m["status"] != "FINISHED":
            found.append(f"{where}: MLflow {arm} run is {m['status']} although its worker finished")
        if run.runner_sig is not None and m["status"] != "KILLED":
            found.append(f"{where}: MLflow {arm} run is {m['status']}; expected KILLED (runner interrupted)")
        if "unreadable" in kinds:
            found.append(f"{where}: unreadable line in the {arm} arm's events.jsonl: "
                         f"{[e for e in events if e.get('event') == 'unreadable'][:1]}")
        # 3. the interrupted arm's training metrics are kept
        if cut:
            logged, written = set(m["steps"]), event_steps(events)
            if not logged:
                found.append(f"{where}: the interrupted {arm} arm has no `{TRAIN_METRIC}` history in MLflow "
                             f"(worker wrote steps {sorted(written)})")
            elif run.runner_sig != signal.SIGKILL:
                # the runner lived to read every event its workers wrote: all of them are in MLflow
                if written - logged:
                    found.append(f"{where}: {arm} arm: steps {sorted(written - logged)} of `{TRAIN_METRIC}` written "
                                 f"by the worker are missing in MLflow")
                if max(logged) < run.step:
                    found.append(f"{where}: {arm} arm: MLflow history ends at step {max(logged)}, the interrupt "
                                 f"came at step {run.step}")
            elif not logged <= written:
                found.append(f"{where}: {arm} arm: MLflow has steps the worker never wrote: {sorted(logged - written)}")
    return found


# ------------------------------------------------------------------ several trials at once


def mlflow_template(folder: Path) -> Path:
    """An empty MLflow SQLite store with its tables made, copied into every trial: MLflow's first-use
    migrations cost every runner about a CPU-second, which 40 runners on 2 cores cannot spare. (Two first
    runs racing on a brand-new store have their own test in test_mlflow_records.py.)"""
    from mlflow import MlflowClient

    path = folder / "mlflow.db"
    with _MLFLOW_LOCK:
        MlflowClient(f"sqlite:///{path}").search_experiments(max_results=1)
    return path


class TrialPool:
    """Runs trials in threads, `parallel` at a time, in the order given; `result` waits for one."""

    def __init__(self, trials: list[Trial], cache: Path, folders: dict[str, Path], parallel: int,
                 template: Path | None = None) -> None:
        self.executor = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="trial")
        self.futures: dict[str, Future] = {
            t.id: self.executor.submit(run_trial, t, folders[t.id], cache, template) for t in trials}

    def result(self, trial: Trial, timeout: float = 850) -> Observation:
        return self.futures[trial.id].result(timeout=timeout)

    def close(self) -> None:
        for future in self.futures.values():
            future.cancel()
        kill_leftovers()
        self.executor.shutdown(wait=False, cancel_futures=True)


# ------------------------------------------------------------------ signals before any training: connecting, loading

STOP_SECONDS = 5.0  # the longest a runner may take to end after SIGINT or SIGTERM while it connects or loads
CONNECT_PHASES = ("ray-probe", "ray-handshake", "slow-dataset")
# ray-probe: --ray-address names a listener whose backlog is full, so the runner's probe waits for a
#   connection that never opens (an unreachable network, as seen from the runner); nothing is recorded yet.
# ray-handshake: a server that accepts TCP and never speaks Ray; the probe passes, the test is recorded,
#   and the runner waits on ray.init: the test must end killed, its MLflow runs KILLED.
# slow-dataset: the experiment's loader takes a minute; preflight is reading it, nothing is recorded yet.
SLOW_LOADER = """import pathlib
import time

from datasets import Dataset


def rows(n, seed):
    pathlib.Path(__file__).with_name("loading").touch()
    time.sleep(60)
    return Dataset.from_dict({"prompt": ["1 + 1 ="] * n, "answer": ["2"] * n})
"""


@dataclass(frozen=True)
class ConnectTrial:
    sig: signal.Signals
    phase: str

    @property
    def id(self) -> str:
        return f"{self.sig.name.lower()}-{self.phase}"

    @property
    def seed(self) -> int:
        return trial_seed(self.id)

    @property
    def records(self) -> bool:
        """Whether the test is recorded before the signal lands (the others stop before any record)."""
        return self.phase == "ray-handshake"


def connect_matrix() -> list[ConnectTrial]:
    return [ConnectTrial(sig, phase) for phase in CONNECT_PHASES for sig in (signal.SIGINT, signal.SIGTERM)]


@dataclass
class ConnectObservation:
    trial: ConnectTrial
    tmp: Path
    waited: float = 0.0  # seconds from the runner's start to the signal
    stop_seconds: float | None = None  # from the signal to the runner's exit (None: it did not exit)
    rc: int | None = None
    output: str = ""
    test_runs: list[tuple] = field(default_factory=list)  # (state, error)
    hypotheses: list[tuple] = field(default_factory=list)
    mlflow: list[tuple[str, str]] = field(default_factory=list)  # (kind, status)
    status_rc: int | None = None
    status_output: str = ""
    integrity: dict[str, str] = field(default_factory=dict)

    def header(self) -> str:
        base = os.environ.get("HYPOTRACK_INTERRUPT_SEED", "0")
        return (f"trial {self.trial.id} seed={self.trial.seed} (rerun: HYPOTRACK_INTERRUPT_SEED={base} python -m pytest "
                f"-m interrupt_matrix tests/test_interrupt_matrix.py -k {self.trial.id}) in {self.tmp}: signal "
                f"{self.waited:.1f}s after the start, exit code {self.rc} {self.stop_seconds}s after it")


class _Listener:
    """A TCP listener for --ray-address: `full` (backlog filled, connections never open) or `silent` (accepts and
    says nothing, as a port that is not Ray's)."""

    def __init__(self, kind: str) -> None:
        self.server = socket.socket()
        self.server.bind(("0.0.0.0" if kind == "silent" else "127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.held: list[socket.socket] = []
        self.accepted = 0
        if kind == "full":
            self.server.listen(0)
            for _ in range(4):  # fill the accept queue: later SYNs are dropped, so connect() waits
                client = socket.socket()
                client.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    client.connect(("127.0.0.1", self.port))
                self.held.append(client)
            time.sleep(0.3)
        else:
            self.server.listen(64)
            threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            self.held.append(connection)
            self.accepted += 1

    def pending_connects(self) -> int:
        """Connections to this port waiting in SYN_SENT (the runner's probe, once it started)."""
        suffix = f":{self.port:04X}"
        rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
        return sum(1 for row in rows if row.split()[2].endswith(suffix) and row.split()[3] == "02")

    def close(self) -> None:
        for sock in [*self.held, self.server]:
            with contextlib.suppress(OSError):
                sock.close()


def run_connect_trial(trial: ConnectTrial, tmp: Path, cache: Path, template: Path | None = None) -> ConnectObservation:
    obs = ConnectObservation(trial, tmp)
    rng = random.Random(trial.seed)
    if template is not None:
        shutil.copy(template, tmp / "mlflow.db")
    env = {**env_for(tmp, cache), "PYTHONFAULTHANDLER": "1"}
    args = ["run", HYPOTHESIS, "--arms", "control", "--seeds", "1", "--max-steps", "2", "--output-dir", str(tmp / "out")]
    listener = None
    if trial.phase == "slow-dataset":
        experiment = tmp / "experiments" / "slow.yaml"
        experiment.parent.mkdir()
        (experiment.parent / "slow_rows.py").write_text(SLOW_LOADER)
        toy = (REPO_EXPERIMENTS / "toy_arith.yaml").read_text().replace("name: toy_arith", "name: slow")
        experiment.write_text(re.sub(r"(?m)^  task: arith$", "  loader: slow_rows:rows", toy))
        args += ["--experiment", str(experiment)]
    else:
        listener = _Listener("full" if trial.phase == "ray-probe" else "silent")
        args += ["--launcher", "ray", "--ray-address", f"127.0.0.1:{listener.port}"]
    baseline = listener.pending_connects() if trial.phase == "ray-probe" else 0
    started = time.time()
    runner = _Runner(args, env, tmp)
    try:
        ready = {
            "ray-probe": lambda: listener.pending_connects() > baseline,
            "ray-handshake": lambda: listener.accepted >= 2,  # the probe's connection, then ray.init's
            "slow-dataset": lambda: (tmp / "experiments" / "loading").exists(),
        }[trial.phase]
        if not _wait_until(lambda: ready() or runner.process.poll() is not None, 240, 0.05):
            raise TimeoutError(f"the runner never reached {trial.phase} in 240s")
        # somewhere inside the phase: the probe waits 5 s, ray.init and the loader a minute
        time.sleep(rng.uniform(0.0, 2.0 if trial.phase == "ray-probe" else 4.0))
        obs.waited = time.time() - started
        if runner.process.poll() is None:
            signalled = time.time()
            runner.process.send_signal(trial.sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                runner.wait(timeout=60)
            if runner.process.poll() is not None:
                obs.stop_seconds = round(time.time() - signalled, 2)
        obs.rc = runner.process.poll()
    finally:
        if runner.process.poll() is None:
            runner.process.send_signal(signal.SIGABRT)  # faulthandler shows where it hung
            with contextlib.suppress(subprocess.TimeoutExpired):
                runner.wait(timeout=10)
            runner.process.kill()
            runner.process.wait()
        runner.reader.join(timeout=5)
        obs.output = runner.output
        if listener is not None:
            listener.close()
    status = cli(["status", "--json"], env, tmp, timeout=120)
    obs.status_rc, obs.status_output = status.returncode, status.stdout[-2000:] + status.stderr[-2000:]
    _wait_until(lambda: _settled(tmp), SETTLE_SECONDS, 0.5)
    db = tmp / "registry.db"
    obs.test_runs = registry_rows(db, "select state, error from test_run") if db.exists() else []
    obs.hypotheses = registry_rows(db, "select id, status from hypothesis_state") if db.exists() else []
    obs.mlflow = [(run.data.tags.get("hypotrack.kind"), run.info.status) for run in mlflow_runs(tmp)]
    obs.integrity = {"registry.db": integrity(db) if db.exists() else "ok", "mlflow.db": integrity(tmp / "mlflow.db")}
    return obs


def connect_problems(obs: ConnectObservation) -> list[str]:
    """Every promise broken by a signal while the runner connects or loads; [] when it held them all."""
    found: list[str] = []
    if obs.stop_seconds is None:
        found.append(f"the runner had not ended 60s after {obs.trial.sig.name} (or ended before it); output "
                     f"tail:\n{tail(obs.output, 3000)}")
    elif obs.stop_seconds > STOP_SECONDS:
        found.append(f"the runner took {obs.stop_seconds}s to end after {obs.trial.sig.name}; at most "
                     f"{STOP_SECONDS:.0f}s is promised")
    if obs.rc != 130:
        found.append(f"exit code {obs.rc}, expected 130; output tail:\n{tail(obs.output, 1500)}")
    if "Traceback" in obs.output:
        found.append(f"traceback in the runner's output:\n{tail(obs.output, 3000)}")
    if obs.status_rc != 0:
        found.append(f"`hypotrack status` exit code {obs.status_rc}: {obs.status_output[-800:]}")
    for name, result in obs.integrity.items():
        if result != "ok":
            found.append(f"PRAGMA integrity_check on {name}: {result}")
    if [h for h, status in obs.hypotheses if status == "testing"]:
        found.append(f"a hypothesis was left `testing`: {obs.hypotheses}")
    if obs.trial.records:
        if [state for state, _ in obs.test_runs] != ["killed"]:
            found.append(f"test runs {obs.test_runs}; expected one, killed")
        if sorted(obs.mlflow) != [("arm", "KILLED"), ("test", "KILLED")]:
            found.append(f"MLflow runs {obs.mlflow}; expected the test's parent and its arm, both KILLED")
    else:
        if obs.test_runs or obs.mlflow:
            found.append(f"something was recorded although the signal came before any record: test runs "
                         f"{obs.test_runs}, MLflow runs {obs.mlflow}")
    return found

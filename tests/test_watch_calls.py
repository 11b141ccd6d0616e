"""`hypotrack.watch` called the way users call it: twice in one script, imported by name, with a mistyped gate,
with something that is not a trainer. Each case runs in a Python of its own, as a user's script does (the
refusals of stop_on all in one), on real GRPOTrainers of the toy model (built, not trained: these calls fail or
succeed before training starts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "gate_scripts"

# A user's script up to its watch line: two trainers (two stages), each on its own model.
PRELUDE = f"""
import sys
sys.path.insert(0, {str(SCRIPTS)!r})
from pathlib import Path
import user_peft_script as script
out = Path(sys.argv[1])
def trainer(stage=0, setup="peft_config"):
    return script.build(out, script.parse([str(out), "--setup", setup]), stage)
"""


def run_user_code(tmp_path: Path, toy_cache: Path, body: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HYPOTRACK_", "MLFLOW_"))}
    env.update(HYPOTRACK_CACHE=str(toy_cache), HYPOTRACK_DB=str(tmp_path / "registry.db"), OMP_NUM_THREADS="1",
               PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-c", PRELUDE + body, str(tmp_path / "out")], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=600)


@pytest.mark.slow
def test_watch_works_for_a_second_trainer_and_when_imported_by_name(tmp_path: Path, toy_cache: Path) -> None:
    done = run_user_code(tmp_path, toy_cache, """
import hypotrack
first = hypotrack.watch(trainer(0), record=False)
second = hypotrack.watch(trainer(1), record=False)     # a second stage, the same line
from hypotrack import watch
third = watch(trainer(2), record=False)
assert len({id(first), id(second), id(third)}) == 3 and third.trainer is not second.trainer
print("ok", type(first).__name__)
""")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["ok", "Watch"]


@pytest.mark.slow
def test_watch_works_after_the_script_imported_its_subpackage_first(tmp_path: Path, toy_cache: Path) -> None:
    done = run_user_code(tmp_path, toy_cache, """
from hypotrack.watch.session import Watch   # imports the subpackage hypotrack.watch before the function is asked for
import hypotrack
session = hypotrack.watch(trainer(), record=False)
assert isinstance(session, Watch)
print("ok")
""")
    assert done.returncode == 0, done.stderr[-3000:]


NOT_A_GATE = {'["nope"]': "'nope' names no gate", '"gate"': "'gate' names no gate",
              '["h03"]': "'h03' names no gate",  # a hypothesis no gate points to would never stop anything either
              '["gates", "ref-kl"]': "'ref-kl' names no gate"}
NOT_NAMES = {"5": "watch(stop_on=5): give", '["gates", None]': "watch(stop_on=['gates', None])",
             '{"gates": True}': "watch(stop_on={'gates': True})"}


@pytest.fixture(scope="module")
def refusals(tmp_path_factory, toy_cache: Path) -> dict[str, str]:
    """Each stop_on value -> what watch says refusing it, from one user process (each a fresh trainer): the
    process's imports, not the refusals, are what takes the time."""
    values = ", ".join(f"{value!r}: {value}" for value in [*NOT_A_GATE, *NOT_NAMES])
    done = run_user_code(tmp_path_factory.mktemp("refusals"), toy_cache, f"""
import json
import hypotrack
from hypotrack.errors import HypotrackError
said = {{}}
for written, stop_on in {{{values}}}.items():
    try:
        hypotrack.watch(trainer(), stop_on=stop_on, record=False)
    except HypotrackError as exc:
        said[written] = str(exc)
print(json.dumps(said))
""")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("stop_on", NOT_A_GATE)
def test_a_stop_on_that_names_no_gate_is_refused_with_the_gates_it_could_name(refusals: dict[str, str],
                                                                             stop_on: str) -> None:
    said = refusals[stop_on]
    assert NOT_A_GATE[stop_on] in said and "would never stop training" in said
    for gate, hypothesis in (("ratio", "h08"), ("ref_kl", "h18"), ("grad", "h19"), ("parity", "h14"), ("lora", "h06")):
        assert f"{gate} ({hypothesis})" in said


@pytest.mark.parametrize("stop_on", NOT_NAMES)
def test_a_stop_on_that_is_not_names_is_refused(refusals: dict[str, str], stop_on: str) -> None:
    assert NOT_NAMES[stop_on] in refusals[stop_on], refusals[stop_on]


@pytest.mark.slow
def test_stop_on_by_gate_name_or_hypothesis_is_accepted(tmp_path: Path, toy_cache: Path) -> None:
    done = run_user_code(tmp_path, toy_cache, """
import hypotrack
session = hypotrack.watch(trainer(), stop_on=["ref_kl", "h19", "gates"], record=False)
print(sorted(session.stop_on))
""")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "['gates', 'h19', 'ref_kl']" in done.stdout


@pytest.mark.parametrize("argument, says", [
    ("object()", "hypotrack.watch takes a trl GRPOTrainer (or a subclass of it): got an instance of object"),
    ("trainer().model", "is a model: build the GRPOTrainer with it"),
    ("None", "hypotrack.watch takes a trl GRPOTrainer (or a subclass of it): got None"),
    ("__import__('trl').GRPOTrainer", "got the class GRPOTrainer: build the trainer and pass it"),
])
def test_watch_given_something_other_than_a_trainer_says_it_takes_a_grpo_trainer(tmp_path: Path, toy_cache: Path,
                                                                                 argument: str, says: str) -> None:
    done = run_user_code(tmp_path, toy_cache, f"""
import hypotrack
from hypotrack.errors import HypotrackError
try:
    hypotrack.watch({argument})
except HypotrackError as exc:
    print(exc)
""")
    assert done.returncode == 0, done.stderr[-3000:]
    assert says in done.stdout, done.stdout
    assert "_hypotrack_watch" not in done.stdout and "_calculate_rewards" not in done.stdout

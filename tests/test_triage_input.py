"""What `hypotrack triage` reads from a user's export: the encodings spreadsheets write, and numbers logged as
the text of a tensor (named, never dropped as "not a number")."""

from __future__ import annotations

import codecs
import json
import re

import pytest

from hypotrack.errors import HypotrackError
from hypotrack.triage.sources import read_source

ROWS = "step,loss,reward\n" + "".join(f"{step},{0.5 - step / 100},{step / 40}\n" for step in range(1, 11))


STATE = json.dumps({"log_history": [{"step": step, "loss": 0.5 - step / 100, "reward": step / 40} for step in range(1, 11)]})
RECORDS = "\n".join(json.dumps(row) for row in json.loads(STATE)["log_history"])


@pytest.mark.parametrize("name, data", [
    ("utf16.csv", ROWS.encode("utf-16")),  # Excel's "Unicode text": a byte-order mark, then UTF-16
    ("utf16-no-mark.csv", ROWS.encode("utf-16-le")),
    ("utf8-mark.csv", codecs.BOM_UTF8 + ROWS.encode()),
    # a spreadsheet in a locale whose decimal mark is the comma separates cells with semicolons
    ("semicolons.csv", ROWS.replace(",", ";").replace(".", ",").encode()),
    ("tabs.tsv", ROWS.replace(",", "\t").encode()),  # a loop that prints its metrics tab-separated
    ("tabs.txt", ROWS.replace(",", "\t").encode()),
    ("trainer_state.json", codecs.BOM_UTF8 + STATE.encode()),  # re-saved by a Windows editor
    ("trainer_state.json", STATE.encode("utf-16")),  # piped through PowerShell, whose redirection writes UTF-16
    ("records.jsonl", RECORDS.encode("utf-16")),
])
def test_reads_exports_in_the_encodings_and_delimiters_spreadsheets_and_shells_write(tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    log = read_source(str(tmp_path / name))
    assert log.series["loss"][:2] == [(1, 0.49), (2, 0.48)] and len(log.series["reward"]) == 10


WINDOWS_STATE = json.dumps({"best_model_checkpoint": "C:\\Users\\Jos\u00e9\\grpo\\checkpoint-10",
                            **json.loads(STATE)}, ensure_ascii=False)


@pytest.mark.parametrize("name, data, said", [
    # Excel saves "CSV" in the Windows code page: a note column's café is the byte 0xe9, no UTF-8
    ("excel.csv", (ROWS.replace("\n", ",caf\u00e9\n").replace("reward,caf\u00e9", "reward,note")).encode("cp1252"),
     r"not UTF-8 \(its byte 0xe9 at position \d+ begins no UTF-8 character\): read as Windows-1252"),
    ("trainer_state.json", WINDOWS_STATE.encode("cp1252"), "read as Windows-1252"),  # a Windows path, in Latin letters
    ("records.jsonl", RECORDS.replace('"reward"', '"r\u00e9compense": 1, "reward"').encode("cp1252"),
     "read as Windows-1252"),
    # UTF-8 with one stray byte (a line another program wrote): the rest stays UTF-8, its "✓" too
    ("mixed.csv", ROWS.replace("reward\n", "reward,ok\n").replace("\n", ",\u2713\n").replace("ok,\u2713", "ok")
     .encode().replace(b"\xe2\x9c\x93\n2,", b"\xe9\n2,", 1),
     r"1 byte\(s\) of the file are not UTF-8 .*read as replacement characters"),
])
def test_a_log_in_no_unicode_encoding_is_read_and_said(tmp_path, name, data, said):
    """Text in no Unicode encoding is a Windows program's: read as Windows-1252 and said, never refused for it."""
    (tmp_path / name).write_bytes(data)
    log = read_source(str(tmp_path / name))
    assert log.series["loss"][:2] == [(1, 0.49), (2, 0.48)] and len(log.series["reward"]) == 10
    assert any(re.search(said, line) for line in log.said), log.said


LONG_STATE = json.dumps({"log_history": [{"step": step, "loss": 0.5 - step / 100, "reward": step / 40,
                                           "completions": {"mean_length": 90.0 + step}} for step in range(1, 41)],
                         "logging_steps": 1}, indent=2)
RECORDS_40 = json.dumps(json.loads(LONG_STATE)["log_history"])  # a loop's json.dump of its list of records
# A notebook whose cells each printed one step's dict, as a loop over steps in separate cells leaves it.
NOTEBOOK_40 = json.dumps({"cells": [{"cell_type": "code", "outputs": [{"output_type": "stream", "name": "stdout", "text": [
    str({"loss": 0.5 - step / 100, "reward": step / 40, "epoch": step / 40}) + "\n"]}]} for step in range(1, 41)],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


@pytest.mark.parametrize("name, text, said", [
    # killed inside step 31's nested value: the 30 whole steps before it, the rest of the file closed off
    ("trainer_state.json", LONG_STATE[:LONG_STATE.index('"mean_length": 121') + 10],
     r"trainer_state\.json ends in the middle of a value, .*read up to its last whole value \(from line \d+ on"),
    ("metrics.json", RECORDS_40[:RECORDS_40.index('"step": 31') + 4], "ends in the middle of a value"),
    ("run.ipynb", NOTEBOOK_40[:NOTEBOOK_40.index("'reward': 0.775") + 5], r"run\.ipynb ends in the middle of a value"),
    ("metrics.csv", "step,loss,reward\n" + "".join(f"{s},{0.5 - s / 100},{s / 40}\n" for s in range(1, 31)) + "31,0.1",
     r"ends inside its last row \(line 32\), as a run still writing it leaves it"),
    ("metrics.jsonl", "".join(json.dumps({"step": s, "loss": 0.5 - s / 100, "reward": s / 40}) + "\n"
                              for s in range(1, 31)) + '{"step": 31, "lo',
     r"ends inside its last record \(line 31\)"),
])
def test_a_log_cut_short_is_read_up_to_its_last_whole_step_and_said(tmp_path, name, text, said):
    """What a run killed while writing its log leaves, or a copy of a log taken while the run wrote it."""
    (tmp_path / name).write_text(text)
    log = read_source(str(tmp_path / name))
    assert [step for step, _ in log.series["reward"]][-1] == 30 and len(log.series["loss"]) == 30
    assert any(re.search(said, sentence) for sentence in log.said), log.said


@pytest.mark.parametrize("cell", ["tensor(0.4500)", "tensor(0.45, device='cuda:0')", "np.float64(0.3)"])
def test_a_number_logged_as_a_tensor_is_named(tmp_path, cell):
    path = tmp_path / "export.csv"
    path.write_text(f'step,loss,reward\n1,0.5,0.1\n2,"{cell}",0.2\n')
    with pytest.raises(HypotrackError, match=r"export\.csv:3: column 'loss' holds .*a number logged as the text"):
        read_source(str(path))


def test_a_tensor_in_trainer_state_is_named(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": [{"step": 1, "loss": 0.5}, {"step": 2, "loss": "tensor(0.4500)"}]}))
    with pytest.raises(HypotrackError, match=r"'loss' at step 2 holds 'tensor\(0\.4500\)'"):
        read_source(str(path))


def test_other_text_columns_are_left_alone(tmp_path):
    path = tmp_path / "export.csv"
    path.write_text("step,loss,phase\n1,0.5,warmup(1)\n2,0.4,main\n")
    assert read_source(str(path)).series == {"loss": [(1, 0.5), (2, 0.4)]}


def _state(tmp_path, history: list[dict]):
    folder = tmp_path / "run"
    folder.mkdir()
    # json.dumps writes float("inf") as Infinity and NaN as NaN, as transformers' trainer_state.json does
    (folder / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    return str(folder)


def _step(step: int, **values) -> dict:
    base = {"step": step, "reward": 0.3 + step / 100, "reward_std": 0.2, "frac_reward_zero_std": 0.3,
            "rewards/correct/mean": 0.3 + step / 100, "rewards/correct/std": 0.4, "entropy": 0.5}
    return {**base, **values}


@pytest.fixture(scope="module")
def hypotheses():
    from pathlib import Path

    from hypotrack.definitions import Project, load_library

    return load_library(Project(Path(__file__).resolve().parents[1])).hypotheses


def test_a_loss_that_became_infinite_is_a_finding_not_a_silent_gap(tmp_path, hypotheses, run_cli):
    from hypotrack.triage.api import triage

    history = [_step(s, loss=0.01 * s, grad_norm=1.0) for s in range(1, 8)]
    history += [_step(s, loss=float("inf"), grad_norm=float("nan")) for s in range(8, 13)]
    source = _state(tmp_path, history)
    report = triage(source, hypotheses)
    assert any(f.startswith("loss became infinite at step 8 (5 of 12 logged steps): the run diverged")
               for f in report.findings), report.findings
    assert any(f.startswith("grad_norm became NaN at step 8") for f in report.findings)
    out = run_cli("triage", source).stdout
    assert "found: loss became infinite at step 8" in out


def test_one_logged_step_is_not_ranked(tmp_path, hypotheses, run_cli):
    from hypotrack.triage.api import MIN_RANK_STEPS, triage

    source = _state(tmp_path, [_step(1, loss=0.0)])
    report = triage(source, hypotheses)
    assert report.ranking == [] and not report.suspects()
    assert report.findings[-1].startswith(f"cannot rank on 1 logged step: triage needs at least {MIN_RANK_STEPS}")
    result = run_cli("triage", source)
    assert result.returncode == 0 and "No ranking: cannot rank on 1 logged step" in result.stdout
    assert "SUSPECT" not in result.stdout


def test_a_resumed_run_that_logged_steps_twice_is_read_from_its_last_segment(tmp_path, hypotheses):
    from hypotrack.triage.api import triage

    history = [_step(s, loss=1.0) for s in range(1, 11)] + [_step(s, loss=2.0) for s in range(6, 13)]
    report = triage(_state(tmp_path, history), hypotheses)
    assert any(f.startswith("steps 6-10 logged more than once") for f in report.findings), report.findings
    assert report.steps == 12 and report.ranking


def test_a_log_piped_in_several_logs_at_once_and_an_empty_source(tmp_path, cli_env, registry_dump, registry_path):
    """`kubectl logs trainer | hypotrack triage -` reads what is piped in, by what it holds, named as standard input;
    `hypotrack triage logs/*.log` gives a report each; an empty SOURCE (a shell variable left unset) is refused, not
    read as the current folder, and nothing is recorded for it."""
    import subprocess
    import sys

    def triage(*args: str, piped: bytes = b"") -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "hypotrack.cli", "triage", *args], input=piped,
                              capture_output=True, env=cli_env, cwd=tmp_path, timeout=120)

    records = "".join(json.dumps({"step": s, "loss": 0.5 - s / 100, "reward": s / 40}) + "\n" for s in range(1, 21))
    piped = triage("-", "--json", piped=records.encode("utf-16"))  # PowerShell's pipe writes UTF-16
    assert piped.returncode == 0, piped.stderr
    report = json.loads(piped.stdout)
    assert report["source"] == "standard input" and report["steps"] == 20 and report["progress"]["state"] == "learning"
    nothing = triage("-")
    assert nothing.returncode != 0 and b"nothing was piped in" in nothing.stderr and b"Traceback" not in nothing.stderr
    for name, scale in (("lr1e-6.jsonl", 0.0), ("lr1e-5.jsonl", 1.0)):
        (tmp_path / name).write_text("".join(json.dumps({"step": s, "reward": 0.3 + scale * s / 40}) + "\n"
                                             for s in range(1, 21)))
    both = triage("lr1e-5.jsonl", "lr1e-6.jsonl", "--json")
    assert both.returncode == 0, both.stderr
    assert [run["progress"]["state"] for run in json.loads(both.stdout)["runs"]] == ["learning", "flat"]
    before = registry_dump(registry_path)
    empty = triage("")
    assert empty.returncode != 0 and b"the source is empty" in empty.stderr and b"Traceback" not in empty.stderr
    assert registry_dump(registry_path) == before


def test_a_dpo_or_sft_log_is_named_for_what_it_is_not_ranked(tmp_path, run_cli):
    """A DPO run's rewards/chosen and rewards/rejected are the policy's implicit rewards, not reward functions, and an
    SFT run logs no reward: each is refused with what it is; among the runs of an export, it is left out and said."""
    dpo = [{"step": s, "loss": 0.69 - s / 1000, "rewards/chosen": 0.01 * s, "rewards/rejected": -0.01 * s,
            "rewards/margins": 0.02 * s, "rewards/accuracies": 0.5 + s / 400, "logps/chosen": -300.0} for s in range(1, 31)]
    sft = [{"step": s, "loss": 2 - s / 100, "mean_token_accuracy": 0.5 + s / 400, "learning_rate": 2e-5}
           for s in range(1, 31)]
    for name, history, says in (("dpo", dpo, "a preference-optimisation run's log (DPO, ORPO"),
                                ("sft", sft, "a supervised fine-tuning run's log")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "trainer_state.json").write_text(json.dumps({"log_history": history}))
        result = run_cli("triage", tmp_path / name)
        assert result.returncode != 0 and says in result.stderr and "Traceback" not in result.stderr, result.stderr
    export = tmp_path / "export.csv"
    export.write_text("Step,sft - train/loss,sft - train/mean_token_accuracy,grpo - train/reward,grpo - train/kl\n" + "".join(
        f"{s},{2 - s / 100},{0.5 + s / 400},{0.2 + s / 100},{0.001 * s}\n" for s in range(1, 31)))
    log = read_source(str(export))
    assert log.run == "grpo" and any(said.startswith("left out run sft of") for said in log.said), log.said

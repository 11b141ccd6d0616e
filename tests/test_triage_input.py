"""What `hypotrack triage` reads from a user's export: the encodings spreadsheets write, and numbers logged as
the text of a tensor (named, never dropped as "not a number")."""

from __future__ import annotations

import codecs
import json

import pytest

from hypotrack.errors import HypotrackError
from hypotrack.triage.sources import read_source

ROWS = "step,loss,reward\n" + "".join(f"{step},{0.5 - step / 100},{step / 40}\n" for step in range(1, 11))


@pytest.mark.parametrize("name, data", [
    ("utf16.csv", ROWS.encode("utf-16")),  # Excel's "Unicode text": a byte-order mark, then UTF-16
    ("utf16-no-mark.csv", ROWS.encode("utf-16-le")),
    ("utf8-mark.csv", codecs.BOM_UTF8 + ROWS.encode()),
])
def test_reads_csv_exports_in_any_encoding_spreadsheets_write(tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    log = read_source(str(tmp_path / name))
    assert log.series["loss"][:2] == [(1, 0.49), (2, 0.48)] and len(log.series["reward"]) == 10


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

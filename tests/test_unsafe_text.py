"""Text people write reaches colleagues' terminals and reports as text: no escape sequences, no rich
markup eaten, no broken markdown table. Run through the real CLI on a real registry."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from hypotrack.text import markdown_cell, printable

HOSTILE = "\x1b[2J\x1b]0;owned\x07[bold]kept[/bold] [x] a|b\rc"


def test_printable_drops_escapes_and_controls_but_keeps_lines() -> None:
    assert printable(HOSTILE) == "[bold]kept[/bold] [x] a|bc"
    assert printable("one\n\ttwo\x9b\x00") == "one\n\ttwo"
    assert markdown_cell("a|b\r\nc") == "a\\|b c"


def test_a_hostile_note_is_shown_as_plain_text_everywhere(run_cli, registry_path, tmp_path) -> None:
    assert run_cli("note", "h01", HOSTILE).returncode == 0
    # a row written by something other than hypotrack (an older version, a script) is cleaned on the way out too
    assert run_cli("status").returncode == 0
    con = sqlite3.connect(registry_path)
    con.execute("insert into note (hypothesis_id, text, author, at) values ('h02', ?, ?, '2026-01-01 00:00:00')",
                ("raw \x1b[31mred\x1b[0m | row", "someone\x1b[2J"))
    con.commit()
    con.close()
    outputs = {command: run_cli(*command.split()) for command in ("status", "show h01", "show h02", "log")}
    report = tmp_path / "report.md"
    assert run_cli("report", "-o", str(report)).returncode == 0
    texts = {**{c: r.stdout + r.stderr for c, r in outputs.items()}, "report": report.read_text()}
    for command, text in texts.items():
        assert "\x1b" not in text and "\r" not in text and "\x07" not in text, (command, text)
    assert "[bold]kept[/bold] [x] a|bc" in texts["show h01"]  # markup shown as typed, not eaten
    assert "[bold]kept[/bold] [x] a\\|bc" in texts["report"]  # the pipe cannot open a new table cell
    assert "raw red | row" in texts["show h02"] and "someone" in texts["show h02"]
    table_rows = [line for line in texts["report"].splitlines() if line.startswith("| H0")]
    assert all(len(re.findall(r"(?<!\\)\|", line)) == 6 for line in table_rows), table_rows  # 5 cells each


def test_show_prints_criteria_text_with_brackets_as_written(run_cli, project_dir) -> None:
    path = project_dir / "hypotheses" / "h06_lora_weight_sync.yaml"
    path.write_text(path.read_text().replace("why: most adapters never moved during training",
                                             "why: most adapters [bold]never[/bold] moved [x]"))
    result = run_cli("show", "h06")
    assert result.returncode == 0, result.stderr
    assert "most adapters [bold]never[/bold] moved [x]" in result.stdout


def test_yaml_anchors_and_merge_keys_read_as_yaml_means_them() -> None:
    from hypotrack.definitions.yamlio import read_yaml

    doc = read_yaml(Path("h.yaml"), "base: &base {time: 1 hour, memory: small}\n"
                                    "resources:\n  <<: *base\n  memory: large\n"
                                    "hooks: &hooks [weights]\nmore_hooks: *hooks\n")
    assert doc.problems == []
    assert doc.data["resources"] == {"time": "1 hour", "memory": "large"}  # written keys win over merged ones
    assert doc.data["more_hooks"] == ["weights"]
    assert doc.line_of(("resources", "memory")) == 4 and doc.line_of(("resources", "time")) == 1


def test_a_huge_log_limit_means_all_runs(run_cli) -> None:
    result = run_cli("log", "--limit", "99999999999999999999")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr

"""Seeds that add up: `--more-seeds` and `--seeds auto` on real tiny runs, a real registry and MLflow store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from runner_support import TINY, cli, env_for, registry_rows

pytestmark = pytest.mark.slow

SHORT = TINY[2:]  # TINY without its --seeds


def test_more_seeds_then_auto_pool_with_the_earlier_tests(tmp_path: Path, toy_cache: Path) -> None:
    env = env_for(tmp_path, toy_cache)
    first = cli(["run", "h01", "--seeds", "1", *SHORT], env, tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr

    dry = cli(["run", "h01", "--more-seeds", "1", *SHORT, "--dry-run"], env, tmp_path)
    assert dry.returncode == 0 and "seeds [1]" in dry.stdout, dry.stdout + dry.stderr

    more = cli(["run", "h01", "--more-seeds", "1", *SHORT], env, tmp_path)
    assert more.returncode == 0, more.stdout + more.stderr
    rows = registry_rows(tmp_path / "registry.db",
                         "select id, seeds, pool_key, verdict from test_run order by started_at")
    (first_id, first_seeds, key, _), (second_id, second_seeds, second_key, verdict) = rows
    assert json.loads(first_seeds) == [0] and json.loads(second_seeds) == [1]  # only the unused seed trained
    assert key == second_key
    evidence = json.loads(registry_rows(tmp_path / "registry.db",
                                        f"select evidence from status_change where test_run_id = '{second_id}' "
                                        "and to_status != 'testing'")[0][0])
    assert evidence["seeds"] == [0, 1] and evidence["pooled_from"] == [first_id]
    assert len(evidence["effect"]["per_seed"]) == 2  # the effect is decided over both tests' seeds
    # the CLI wraps the verdict at the terminal width, which may fall inside the phrase
    assert f"pooled with test run(s) {first_id}" in " ".join(more.stdout.split())

    auto = cli(["run", "h01", "--seeds", "auto", "--max-seeds", "3", *SHORT], env, tmp_path)
    assert auto.returncode == 0, auto.stdout + auto.stderr
    rows = registry_rows(tmp_path / "registry.db", "select id, seeds from test_run order by started_at")
    assert [json.loads(seeds) for _, seeds in rows] == [[0], [1], [2]]  # one seed added, then max reached
    assert "--seeds auto: 1 test run(s), 3 seeds in the verdict" in " ".join(auto.stdout.split())

    again = cli(["run", "h01", "--seeds", "auto", "--max-seeds", "3", *SHORT], env, tmp_path)
    assert again.returncode != 0 and "already trained 3 seeds" in again.stderr and "Traceback" not in again.stderr
    assert len(registry_rows(tmp_path / "registry.db", "select id from test_run")) == 3


def test_seed_flags_that_contradict_each_other_are_refused(tmp_path: Path, toy_cache: Path) -> None:
    env = env_for(tmp_path, toy_cache)
    for args, words in ((["--max-seeds", "4"], "only with --seeds auto"),
                        (["--seeds", "2", "--more-seeds", "1"], "give one of the two"),
                        (["--seeds", "auto", "--arms", "control"], "needs the treatment arm"),
                        (["--seeds", "often"], "not a valid integer")):
        result = cli(["run", "h01", *args, "--dry-run"], env, tmp_path)
        assert result.returncode == 2 and words in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "registry.db").exists() or not registry_rows(tmp_path / "registry.db",
                                                                       "select id from test_run")

"""`hypotrack init` and `hypotrack new`: a project of the user's own beside the hypotheses that ship."""

from __future__ import annotations

from pathlib import Path

from runner_support import cli, env_for


def project_env(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "my_project"
    root.mkdir()
    env = env_for(tmp_path, tmp_path / "cache", project=root)
    return root, env


def test_init_then_new_hypothesis_validates_with_the_shipped_ones(tmp_path: Path) -> None:
    root, env = project_env(tmp_path)
    assert cli(["init"], env, root).returncode == 0
    assert (root / "experiments" / "my_run.yaml").is_file()
    made = cli(["new", "h30", "Judge favours long answers", "--statement", "The judge scores length."], env, root)
    assert made.returncode == 0, made.stderr
    written = root / "hypotheses" / "h30_judge_favours_long_answers.yaml"
    assert "The judge scores length." in written.read_text()
    checked = cli(["validate"], env, root)
    assert checked.returncode == 0 and "28 hypotheses" in checked.stdout, checked.stdout + checked.stderr
    # the template run resolves on the toy lab as written
    dry = cli(["run", "h30", "--dry-run"], env, root)
    assert dry.returncode == 0, dry.stderr


def test_new_refuses_an_id_that_would_shadow_a_shipped_hypothesis(tmp_path: Path) -> None:
    root, env = project_env(tmp_path)
    assert cli(["init"], env, root).returncode == 0
    before = sorted(p.name for p in (root / "hypotheses").iterdir())
    refused = cli(["new", "h11", "My idea"], env, root)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "h11 is already declared in" in refused.stderr and "h28" in refused.stderr, refused.stderr
    assert sorted(p.name for p in (root / "hypotheses").iterdir()) == before
    assert cli(["new", "h30", "My idea"], env, root).returncode == 0
    again = cli(["new", "h30", "Another idea"], env, root)
    assert again.returncode != 0 and "already declares h30" in again.stderr, again.stderr

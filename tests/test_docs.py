"""The documentation: the README stays short, the site builds strictly, and what its pages name exists in the code.

The reference pages are generated from the code at every build (docs/gen_reference.py), so they cannot drift;
the hand-written pages can, so the flags a `hypotrack ...` command line in them passes and the `diag/*`
metrics they name are checked against the CLI and the hooks as they are now.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

REPO = Path(__file__).resolve().parents[1]
README_MAX_LINES = 250
# Every page a user reads: the README and the hand-written pages of the site.
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return out


def test_the_readme_is_read_in_one_sitting() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to docs/"


def test_the_site_builds_with_every_reference_page_generated(site: Path) -> None:
    from hypotrack.faults.manifest import FAULTS
    from hypotrack.hooks.manifest import HOOK_CLASSES
    from hypotrack.shipped import HYPOTHESES_DIR
    from hypotrack.treatments.manifest import TREATMENT_CLASSES

    pages = {name: (site / "reference" / name / "index.html").read_text(encoding="utf-8")
             for name in ("hypotheses", "hooks", "faults", "treatments", "run-settings", "cli")}
    for path in HYPOTHESES_DIR.glob("h*.yaml"):
        assert f'id="{path.name.split("_", 1)[0]}"' in pages["hypotheses"], path.name
    assert all(f'id="{name}"' in pages["hooks"] for name in HOOK_CLASSES)
    assert all(f'id="{name}"' in pages["faults"] for name in FAULTS)
    assert all(name in pages["treatments"] for name in TREATMENT_CLASSES)
    assert "--no-peft" in pages["run-settings"] and "grpo.beta" in pages["run-settings"]
    assert "hypotrack triage" in pages["cli"] and "Usage:" in pages["cli"]
    # the home page is the README, its links made relative to the site
    assert "Four ways in" in (site / "index.html").read_text(encoding="utf-8")


def _command_options() -> dict[str, set[str]]:
    """Every command path ('run', 'db upgrade') -> the option names it accepts, from click itself."""
    from hypotrack.cli import cli

    root = click.Context(cli, info_name="hypotrack")
    found: dict[str, set[str]] = {}

    def walk(command: click.Command, path: str, context: click.Context) -> None:
        found[path] = {opt for param in command.get_params(context) for opt in (*param.opts, *param.secondary_opts)}
        if isinstance(command, click.Group):
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                walk(sub, f"{path} {name}".strip(), click.Context(sub, info_name=name, parent=context))

    walk(cli, "", root)
    return found


def _hypotrack_lines(text: str) -> list[str]:
    """Each `hypotrack ...` command line a page shows: in a console block or an inline code span."""
    lines = [m.group(1) for m in re.finditer(r"^\$ (hypotrack [^#\n]*)", text, re.MULTILINE)]
    lines += [m.group(1) for m in re.finditer(r"`(hypotrack [a-z][^`]*)`", text)]
    return lines


def test_every_flag_a_page_passes_to_hypotrack_exists() -> None:
    options = _command_options()
    global_options = options[""]
    wrong = []
    for page in PAGES:
        for line in _hypotrack_lines(page.read_text(encoding="utf-8")):
            words = shlex.split(line)[1:]  # a quoted command line is one argument
            path = ""
            while words and not words[0].startswith("-") and f"{path} {words[0]}".strip() in options:
                path = f"{path} {words.pop(0)}".strip()
            known = options[path] | global_options
            for word in words:
                flag = word.split("=", 1)[0]
                if re.fullmatch(r"--?[a-z][a-z0-9-]*", flag) and flag not in known:
                    wrong.append(f"{page.relative_to(REPO)}: `{line.strip()}`: hypotrack {path} has no {flag}")
    assert not wrong, "\n".join(wrong)


def test_every_diagnostics_metric_a_page_names_is_logged_by_its_hook() -> None:
    from hypotrack.hooks.manifest import HOOK_METRICS

    def known(hook: str, metric: str) -> bool:
        patterns = [re.escape(m).replace(r"\{func\}", "[^/]+").replace(r"\{a\}", "[^/]+").replace(r"\{b\}", "[^/]+")
                    for m in HOOK_METRICS.get(hook, [])]
        return any(re.fullmatch(p, metric) for p in patterns)

    wrong = []
    for page in PAGES:
        for hook, metric in re.findall(r"diag/([a-z_]+)/([a-z0-9_./]+[a-z0-9_])", page.read_text(encoding="utf-8")):
            if not known(hook, metric):
                wrong.append(f"{page.relative_to(REPO)}: diag/{hook}/{metric}")
    assert not wrong, "\n".join(wrong)

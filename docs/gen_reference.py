"""The reference pages of the documentation, generated from the code at every `mkdocs build`.

mkdocs-gen-files runs this script and serves what it writes as pages, so the reference cannot drift from
the code it describes: the hypotheses are read by hypotrack's own loader from the shipped library, the
hooks from their classes (hooks/manifest.py), the planted faults from their catalogue, the run flags from
`RUN_SETTINGS`, and the CLI pages from click's own help. Nothing here is copied by hand.
"""

from __future__ import annotations

import click
import mkdocs_gen_files

from hypotrack.cli import cli
from hypotrack.hooks.manifest import HOOK_CLASSES, HOOK_SETTING_DEFAULTS
from hypotrack.library import HYPOTHESES_DIR
from hypotrack.spec.loader import load_library
from hypotrack.spec.models import AnyOf, Criterion, Hypothesis
from hypotrack.spec.project import Project
from hypotrack.spec.run_settings import RUN_SETTINGS
from hypotrack.toy.fault_catalog import FAULTS


def cell(text: object) -> str:
    """One markdown table cell: a single line with its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def criterion_text(criterion: Criterion) -> str:
    value = f"{criterion.metric} [{criterion.arm}, {criterion.steps}"
    if criterion.steps in ("mean_last", "mean_first"):
        value += f" {criterion.k}"
    value += f", seeds {criterion.seeds}]"
    if criterion.abs:
        value = f"abs({value})"
    return f"`{value} {criterion.op} {criterion.threshold:g}`" + (f": {criterion.why}" if criterion.why else "")


def clause_lines(clauses: list) -> list[str]:
    lines = []
    for clause in clauses:
        if isinstance(clause, AnyOf):
            lines.append("- any of:")
            lines += [f"    - {criterion_text(c)}" for c in clause.any]
        else:
            lines.append(f"- {criterion_text(clause)}")
    return lines or ["- (none)"]


def treatment_text(hypothesis: Hypothesis) -> str:
    changes = hypothesis.treatment.model_dump(exclude_defaults=True)
    return ", ".join(f"`{key}: {value}`" for key, value in changes.items()) or "none (the fix is in the user's code)"


def hypotheses_page() -> str:
    library = load_library(Project(HYPOTHESES_DIR.parent))
    hypotheses = sorted(library.hypotheses.values(), key=lambda h: h.id)
    out = ["# The hypothesis library", "",
           "Every hypothesis that ships with hypotrack, read from its YAML file by hypotrack's own loader when "
           "this page was built. `hypotrack show ID` prints the same definition with the hypothesis's status.", "",
           "| id | title | priority | requires | treatment |", "|---|---|---|---|---|"]
    out += [f"| [{h.id}](#{h.id}) | {cell(h.title)} | {h.priority} | {', '.join(h.requires) or '-'} | "
            f"{cell(treatment_text(h))} |" for h in hypotheses]
    for h in hypotheses:
        out += ["", f"## {h.id}", "", f"**{h.title}** ({h.priority} priority; file "
                f"`hypotheses/{library.hypothesis_files[h.id].name}`)", "", " ".join(h.statement.split()), ""]
        if h.requires:
            out += [f"Requires: {', '.join(h.requires)} (a run without it is recorded not applicable).", ""]
        if h.prerequisites:
            out += [f"Prerequisites: {', '.join(h.prerequisites)}.", ""]
        out += [f"Treatment: {treatment_text(h)}.", "", f"Hooks: {', '.join(f'`{n}`' for n in h.hooks) or 'none'}.",
                "", "Validated when every clause holds:", "", *clause_lines(h.criteria.validated), "",
                "Invalidated when every clause holds:", "", *clause_lines(h.criteria.invalidated)]
        if h.expected_readings:
            out += ["", "Expected readings, not this bug:", "", *[f"- {' '.join(r.split())}" for r in h.expected_readings]]
    return "\n".join(out) + "\n"


def hooks_page() -> str:
    out = ["# Diagnostics hooks", "",
           "Every hook, read off its class (`hypotrack/hooks/<name>.py`) when this page was built. A hook logs "
           "`diag/<hook>/<metric>`; `{func}` stands for a reward function's name. Settings go under a hypothesis's "
           "`hook_settings: {<hook>: {<setting>: value}}`.", ""]
    for name, hook in sorted(HOOK_CLASSES.items()):
        out += [f"## `{name}`", "", " ".join(hook.description.split()), "", "Metrics: " +
                ", ".join(f"`{m}`" for m in hook.metrics), ""]
        settings = HOOK_SETTING_DEFAULTS[name]
        if settings:
            docs = setting_docs(hook)
            out += ["| setting | default | what it sets |", "|---|---|---|"]
            out += [f"| `{key}` | `{value!r}` | {cell(docs.get(key, ''))} |" for key, value in settings.items()]
            out.append("")
    return "\n".join(out) + "\n"


def setting_docs(hook: type) -> dict[str, str]:
    """Each setting's docstring: the string literal that follows the field in the Settings class's source."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(hook.Settings)))
    body = tree.body[0].body
    docs = {}
    for field, following in zip(body, body[1:]):
        if (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
                and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)):
            docs[field.target.id] = following.value.value
    return docs


def faults_page() -> str:
    out = ["# Planted faults", "",
           "The faults the toy lab can plant (`--plant NAME` on `hypotrack run`, `plant:` in an experiment, "
           "and the rows of `hypotrack selftest`), read from `hypotrack/toy/fault_catalog.py` when this page was "
           "built. A fault is part of the setup being debugged: it applies to both arms.", "",
           "| fault | imitates | what it does |", "|---|---|---|"]
    out += [f"| `{name}` | [{hypothesis}](hypotheses.md#{hypothesis}) | {cell(what)} |"
            for name, (hypothesis, what) in FAULTS.items()]
    return "\n".join(out) + "\n"


def triage_metrics_page() -> str:
    from hypotrack.spec.triage import DERIVED_METRICS

    out = ["# Triage metrics", "",
           "What triage derives by role from a run's own logs, beside TRL's keys and the hooks' `diag/*` keys, read "
           "from `hypotrack/spec/triage.py` when this page was built. A hypothesis's `triage:` signatures may name "
           "any of them; 'run:' marks a reading of the whole run rather than of each step.", "",
           "| metric | what it is |", "|---|---|"]
    out += [f"| `{name}` | {cell(what)} |" for name, what in DERIVED_METRICS.items()]
    return "\n".join(out) + "\n"


def run_settings_page() -> str:
    out = ["# Run settings", "",
           "Every setting a `hypotrack run` flag or a hypothesis's `treatment:` can change, and where it lands "
           "in the arm it changes (`grpo.<field>` is a TRL `GRPOConfig` field, `lora.<field>` a peft `LoraConfig` "
           "field), read from `RUN_SETTINGS` when this page was built. Setup settings describe the run being "
           "debugged and apply to both arms; treatment settings change the treatment arm only.", "",
           "| treatment key | flag | scope | lands on | what it does |", "|---|---|---|---|---|"]
    out += [f"| `{s.name}` | `{s.flag_name}` | {s.scope} | `{s.lands}` | {cell(s.help)} |" for s in RUN_SETTINGS]
    return "\n".join(out) + "\n"


def cli_page() -> str:
    out = ["# Command line", "", "The `--help` of every command, as click prints it when this page was built.", ""]
    root = click.Context(cli, info_name="hypotrack")
    out += ["## hypotrack", "", "```text", cli.get_help(root), "```"]
    for name in cli.list_commands(root):
        command = cli.get_command(root, name)
        contexts = [(name, command)]
        if isinstance(command, click.Group):
            group_context = click.Context(command, info_name=name, parent=root)
            contexts += [(f"{name} {sub}", command.get_command(group_context, sub))
                         for sub in command.list_commands(group_context)]
        for full_name, sub in contexts:
            context = click.Context(sub, info_name=full_name, parent=root)
            out += ["", f"## hypotrack {full_name}", "", "```text", sub.get_help(context), "```"]
    return "\n".join(out) + "\n"


def home_page() -> str:
    """The README, its links made relative to docs/: the site's home and the repository's front page are one text."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    return readme.replace("](docs/", "](")


PAGES = {
    "index.md": home_page,
    "reference/hypotheses.md": hypotheses_page,
    "reference/hooks.md": hooks_page,
    "reference/faults.md": faults_page,
    "reference/run-settings.md": run_settings_page,
    "reference/triage-metrics.md": triage_metrics_page,
    "reference/cli.md": cli_page,
}

for path, render in PAGES.items():
    with mkdocs_gen_files.open(path, "w") as page:
        page.write(render())

"""The reference pages of the documentation, generated from the code at every `mkdocs build`.

mkdocs-gen-files runs this script and serves what it writes as pages, so the reference cannot drift from
the code it describes: the hypotheses are read by hypotrack's own loader from the shipped library, the
hooks, planted faults and treatments from their classes (their manifest.py), the run flags from
`RUN_SETTINGS`, and the CLI pages from click's own help. Nothing here is copied by hand.
"""

from __future__ import annotations

import click
import mkdocs_gen_files

from hypotrack.cli import cli
from hypotrack.definitions.loader import load_library
from hypotrack.definitions.models import AnyOf, Criterion, Hypothesis
from hypotrack.definitions.project import Project
from hypotrack.definitions.run_settings import RUN_SETTINGS
from hypotrack.faults.manifest import FAULT_CLASSES
from hypotrack.hooks.manifest import HOOK_CLASSES
from hypotrack.shipped import HYPOTHESES_DIR
from hypotrack.treatments.manifest import TREATMENT_CLASSES


def cell(text: object) -> str:
    """One markdown table cell: a single line with its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def criterion_text(criterion: Criterion) -> str:
    value = f"{criterion.metric} [{criterion.arm}, {criterion.steps_text()}, seeds {criterion.seeds}]"
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
        out += settings_table(hook)
    return "\n".join(out) + "\n"


def settings_table(unit: type) -> list[str]:
    """A unit's settings (a hook's, a fault's, a treatment's): each default and the docstring under its field."""
    settings, docs = unit.setting_defaults(), unit.setting_docs()
    if not settings:
        return []
    return ["| setting | default | what it sets |", "|---|---|---|",
            *[f"| `{key}` | `{value!r}` | {cell(docs.get(key, ''))} |" for key, value in settings.items()], ""]


def faults_page() -> str:
    out = ["# Planted faults", "",
           "The faults the toy lab can plant (`--plant NAME` on `hypotrack run`, `plant:` in an experiment, "
           "and the rows of `hypotrack selftest`), each read off its class (`hypotrack/faults/<name>.py`) when this "
           "page was built. A fault is part of the setup being debugged: it applies to both arms.", "",
           "| fault | imitates | what it does |", "|---|---|---|"]
    out += [f"| [`{name}`](#{name}) | [{cls.imitates}](hypotheses.md#{cls.imitates}) | {cell(cls.description)} |"
            for name, cls in FAULT_CLASSES.items()]
    for name, cls in FAULT_CLASSES.items():
        out += ["", f"## `{name}`", "", f"Imitates {cls.imitates}; touches {', '.join(cls.seams)}.", ""]
        if cls.needs_vllm:
            out += [f"Needs vLLM: {cls.needs_vllm}.", ""]
        if cls.not_shown_on_toy:
            out += [f"Not shown on the toy lab: {cls.not_shown_on_toy}.", ""]
        out += settings_table(cls)
    return "\n".join(out) + "\n"


def treatments_page() -> str:
    out = ["# Treatments inside the trainer", "",
           "The treatments hypotrack applies to the built trainer, each read off its class "
           "(`hypotrack/treatments/<name>.py`) when this page was built. Each is a `hypotrack run` flag and a key of a "
           "hypothesis's `treatment:`; a command experiment takes it without a flag of its script's.", ""]
    for name, cls in TREATMENT_CLASSES.items():
        out += [f"## `{name}`", "", f"`--{name.replace('_', '-')}` on `hypotrack run`, `{name}: true` in a treatment. Fixes [{cls.fixes}](hypotheses.md#{cls.fixes}); touches "
                f"{', '.join(cls.seams)}.", "", " ".join(cls.help.split()), "", *settings_table(cls)]
    return "\n".join(out) + "\n"


def triage_metrics_page() -> str:
    from hypotrack.definitions.triage import DERIVED_METRICS

    out = ["# Triage metrics", "",
           "What triage derives by role from a run's own logs, beside TRL's keys and the hooks' `diag/*` keys, read "
           "from `hypotrack/definitions/triage.py` when this page was built. A hypothesis's `triage:` signatures may name "
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
    "reference/treatments.md": treatments_page,
    "reference/run-settings.md": run_settings_page,
    "reference/triage-metrics.md": triage_metrics_page,
    "reference/cli.md": cli_page,
}

for path, render in PAGES.items():
    with mkdocs_gen_files.open(path, "w") as page:
        page.write(render())

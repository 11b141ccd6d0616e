"""Load and cross-check hypotheses and experiments; report every problem at once.

Each problem is ``file:line: key: message`` so an editor can jump to it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from . import metrics as metric_names
from .models import Experiment, Hypothesis
from .project import Project
from .settings_check import check_setting, config_problem
from .unread import unread_settings
from .yamlio import YamlDoc, YamlSyntaxError, dotted, read_yaml


@dataclass(frozen=True)
class Problem:
    path: Path
    line: int
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.key}: {self.message}"


class SpecError(Exception):
    """One or more problems in the user's YAML files."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(dict.fromkeys(problems))  # a problem found along two paths is reported once
        super().__init__("\n".join(str(p) for p in problems))


@dataclass
class Library:
    project: Project
    hypotheses: dict[str, Hypothesis] = field(default_factory=dict)
    experiments: dict[str, Experiment] = field(default_factory=dict)
    hypothesis_files: dict[str, Path] = field(default_factory=dict)
    experiment_files: dict[str, Path] = field(default_factory=dict)
    docs: dict[Path, YamlDoc] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    partial: bool = False  # only some files were loaded (validate PATH...)
    # Every experiment file read so far (None: it had problems), so one used by several hypotheses is
    # read, and its problems reported, once.
    experiments_read: dict[Path, Experiment | None] = field(default_factory=dict)

    def raise_if_problems(self) -> None:
        if self.problems:
            raise SpecError(self.problems)


def _parse(path: Path, model: type[BaseModel], library: Library) -> BaseModel | None:
    try:
        doc = read_yaml(path)
    except YamlSyntaxError as exc:
        library.problems.append(Problem(path, exc.line, "(document)", exc.message))
        return None
    except OSError as exc:
        library.problems.append(Problem(path, 1, "(document)", f"cannot read file: {exc.strerror}"))
        return None
    library.docs[path] = doc
    for line, key, message in doc.problems:
        library.problems.append(Problem(path, line, key, message))
    if not isinstance(doc.data, dict):
        library.problems.append(Problem(path, doc.line_of(()), "(document)", "expected a mapping of keys"))
        return None
    try:
        parsed = model.model_validate(doc.data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = _data_loc(doc.data, tuple(err["loc"]))
            message = err["msg"]
            if err["type"] == "extra_forbidden":
                message = "unknown key"
                if model is Hypothesis and tuple(err["loc"]) == ("control",):
                    message = ("a hypothesis cannot change the control arm: the control arm is the user's run, the "
                               "experiment as declared. Put what both arms need into the experiment (or a copy of "
                               "it), and what the hypothesis needs of the run under requires:")
            elif err["type"] == "missing":
                message = "required key is missing"
            elif message.startswith("Value error, "):
                message = message[len("Value error, "):]
            library.problems.append(Problem(path, doc.line_of(loc), dotted(loc), message))
        return None
    for loc, message in unread_settings(parsed):
        library.problems.append(Problem(path, doc.line_of(loc), dotted(loc), message))
    return parsed


def _data_loc(data: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """``loc`` without pydantic's union tags (``validated.0.criterion.op`` -> ``validated.0.op``).

    A non-final string part that is not a key of the mapping at that point is a tag, not a key.
    """
    out: list[Any] = []
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        elif isinstance(part, str) and not last:
            continue
        else:
            data = None
        out.append(part)
    return tuple(out)


def _problem(library: Library, path: Path, loc: tuple[Any, ...], message: str) -> None:
    doc = library.docs.get(path)
    line = doc.line_of(loc) if doc else 1
    library.problems.append(Problem(path, line, dotted(loc), message))


def load_experiment(path: Path, library: Library) -> Experiment | None:
    key = path.resolve()
    if key not in library.experiments_read:
        library.experiments_read[key] = _load_experiment(path, library)
    return library.experiments_read[key]


def _load_experiment(path: Path, library: Library) -> Experiment | None:
    experiment = _parse(path, Experiment, library)
    if not isinstance(experiment, Experiment):
        return None
    if experiment.name != path.stem:
        _problem(library, path, ("name",), f"name {experiment.name!r} must equal the file name {path.stem!r}")
    for key, value in experiment.settings.items():
        message = check_setting(key, value)
        if message:
            _problem(library, path, ("settings", key), message)
    problem = config_problem(experiment.settings)
    if problem:
        _problem(library, path, ("settings", problem[0]), problem[1])
    _check_plants(library, path, ("plant",), experiment.plant)
    if experiment.trainer == "critic" and experiment.critic is not None:
        _check_section(library, path, "critic", experiment.critic, "hypotrack.critic.settings", "CriticSettings")
    if experiment.trainer == "parity" and experiment.parity is not None:
        _check_section(library, path, "parity", experiment.parity, "hypotrack.parity.settings", "ParitySettings")
    return experiment


def _check_section(library: Library, path: Path, key: str, data: dict, module: str, name: str) -> None:
    import importlib

    try:
        settings_model = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        _problem(library, path, (key,), f"this install of hypotrack has no {key} support ({module})")
        return
    try:
        settings_model.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
            _problem(library, path, (*key.split("."), *err["loc"]), message)


def _check_plants(library: Library, path: Path, loc: tuple[Any, ...], names: list[str]) -> None:
    from hypotrack.faults.manifest import FAULTS

    for index, name in enumerate(names):
        if name not in FAULTS:
            _problem(library, path, (*loc, index),
                     f"unknown planted fault {name!r} (known: {', '.join(sorted(FAULTS))})")


def _yaml_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and not p.name.startswith("."))


def resolve_experiment_path(name_or_path: str, project: Project, base: Path | None = None) -> Path:
    """An experiment by name (the project's folder first, then the shipped library) or by path.

    A relative path is relative to ``base``: the project root for a hypothesis's `experiment:`, the
    working directory for `--experiment`.
    """
    candidate = Path(name_or_path).expanduser()
    if candidate.suffix in (".yaml", ".yml") or os.sep in name_or_path:
        return candidate if candidate.is_absolute() else (base or project.root) / candidate
    found = [layer.experiments_dir / f"{name_or_path}.yaml" for layer in reversed(project.layers())]
    return next((path for path in found if path.exists()), found[0])


def load_library(
    project: Project | None = None,
    paths: list[Path] | None = None,
    check_metrics: bool = True,
) -> Library:
    """Load every experiment and hypothesis (or just ``paths``) and cross-check them.

    Explicit ``paths`` may be files or folders; files under a folder named
    ``experiments`` (or with ``trainer:``/``model:`` keys) are experiments.
    """
    project = project or Project.locate()
    library = Library(project=project)
    if paths:
        library.partial = True
        hyp_files, exp_files = _split_paths(paths, library)
        _load_files(library, hyp_files, exp_files)
    else:
        # The shipped library first; the project's own files add to it and override it by id or name.
        for layer in project.layers():
            _load_files(library, _yaml_files(layer.hypotheses_dir), _yaml_files(layer.experiments_dir))
    _cross_check(library, check_metrics)
    return library


def _load_files(library: Library, hyp_files: list[Path], exp_files: list[Path]) -> None:
    """One layer of files; a later layer replaces an earlier one's hypothesis or experiment of the same id/name."""
    seen: set[str] = set()
    for path in exp_files:
        experiment = load_experiment(path, library)
        if experiment is not None:
            library.experiments[experiment.name] = experiment
            library.experiment_files[experiment.name] = path
    for path in hyp_files:
        hypothesis = _parse(path, Hypothesis, library)
        if not isinstance(hypothesis, Hypothesis):
            continue
        if not path.stem.startswith(hypothesis.id + "_") and path.stem != hypothesis.id:
            _problem(library, path, ("id",), f"id {hypothesis.id!r} must match the file name (e.g. {hypothesis.id}_<slug>.yaml)")
        if hypothesis.id in seen:
            other = library.hypothesis_files[hypothesis.id]
            _problem(library, path, ("id",), f"duplicate id {hypothesis.id!r}: also declared in {other}")
            continue
        seen.add(hypothesis.id)
        library.hypotheses[hypothesis.id] = hypothesis
        library.hypothesis_files[hypothesis.id] = path


def _split_paths(paths: list[Path], library: Library) -> tuple[list[Path], list[Path]]:
    hyp_files: list[Path] = []
    exp_files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for file in _yaml_files(path):
                if path.name == "hypotheses":
                    hyp_files.append(file)
                else:
                    (exp_files if _is_experiment_file(file) else hyp_files).append(file)
        elif path.exists():
            (exp_files if _is_experiment_file(path) else hyp_files).append(path)
        else:
            library.problems.append(Problem(path, 1, "(path)", "no such file or folder"))
    return hyp_files, exp_files


# Top-level keys only an experiment has (a hypothesis has an id: and criteria: instead).
EXPERIMENT_KEYS = frozenset({"trainer", "model", "data", "command", "rewards", "settings", "lora", "seeds"})


def _is_experiment_file(path: Path) -> bool:
    """A file named on the command line is an experiment if it sits in an experiments/ folder or reads like one (its
    keys), wherever it is: a command experiment kept beside its script is no hypothesis."""
    if path.parent.name == "experiments":
        return True
    from .yamlio import YamlSyntaxError, read_yaml

    try:
        data = read_yaml(path).data
    except (OSError, YamlSyntaxError):
        return False  # read as a hypothesis, whose loader reports why the file cannot be read
    return isinstance(data, dict) and "id" not in data and bool(EXPERIMENT_KEYS & set(data))


def _cross_check(library: Library, check_metrics: bool) -> None:
    patterns = metric_names.known_metric_patterns() if check_metrics else []
    known_hooks = set(metric_names.hook_metrics())
    for hyp_id, hypothesis in library.hypotheses.items():
        path = library.hypothesis_files[hyp_id]
        for index, prereq in enumerate(hypothesis.prerequisites):
            if prereq == hyp_id:
                _problem(library, path, ("prerequisites", index), "a hypothesis cannot be its own prerequisite")
            elif prereq not in library.hypotheses and not _declared_elsewhere(library, prereq):
                _problem(library, path, ("prerequisites", index), f"unknown hypothesis id {prereq!r}")
        for index, hook in enumerate(hypothesis.hooks):
            if hook not in known_hooks:
                _problem(library, path, ("hooks", index),
                         f"unknown diagnostics hook {hook!r} (known: {', '.join(sorted(known_hooks))})")
        for hook, settings in hypothesis.hook_settings.items():
            if hook not in hypothesis.hooks:
                _problem(library, path, ("hook_settings", hook), f"settings for hook {hook!r}, which is not in hooks")
                continue
            allowed = metric_names.hook_setting_names(hook)
            for key in settings:
                if key not in allowed:
                    _problem(library, path, ("hook_settings", hook, key),
                             f"unknown setting for hook {hook!r} (known: {', '.join(sorted(allowed)) or 'none'})")
        for key, value in hypothesis.treatment.set.items():
            message = check_setting(key, value)
            if message:
                _problem(library, path, ("treatment", "set", key), message)
        _check_plants(library, path, ("treatment", "plant"), hypothesis.treatment.plant or [])
        experiment = _experiment_for(library, hypothesis, path)
        if experiment is None:
            continue
        if hypothesis.treatment.set and not config_problem(experiment.settings):  # else reported at the experiment
            problem = config_problem({**experiment.settings, **hypothesis.treatment.set})
            if problem:
                _problem(library, path, ("treatment", "set", problem[0]) if problem[0] in hypothesis.treatment.set
                         else ("treatment", "set"), f"{problem[1]} (with the settings of experiment {experiment.name})")
        for key in ("critic", "parity"):
            changes = getattr(hypothesis.treatment, key)
            if changes:
                merged = {**(getattr(experiment, key) or {}), **changes}
                module = f"hypotrack.{key}.settings"
                _check_section(library, path, f"treatment.{key}", merged, module,
                               "CriticSettings" if key == "critic" else "ParitySettings")
        if not check_metrics:
            continue
        for group, loc, criterion in hypothesis.criteria.all_criteria():
            where = ("criteria", group, *loc, "metric")
            message = check_criterion_metric(criterion.metric, experiment, hypothesis, patterns)
            if message:
                _problem(library, path, where, message)
            elif criterion.metric.startswith("diag/"):
                hook = criterion.metric.split("/")[1]
                if hook not in hypothesis.hooks:
                    _problem(library, path, where, f"metric {criterion.metric!r} comes from hook {hook!r}; add it to hooks")
        if "treatment" not in hypothesis.arms and "treatment" in hypothesis.arms_needed():
            _problem(library, path, ("arms",), "the criteria compare arms, but arms has no 'treatment'")


def check_criterion_metric(metric: str, experiment: Experiment, hypothesis: Hypothesis,
                           patterns: list[str] | None = None) -> str | None:
    """Why a criterion's metric cannot be read on this experiment (unknown, or from another kind of run), or None."""
    patterns = metric_names.known_metric_patterns() if patterns is None else patterns
    funcs = metric_names.reward_func_names(experiment.reward_names() + (hypothesis.treatment.rewards or []))
    message = metric_names.check_metric(metric, metric_names.expand(patterns, funcs), patterns)
    if message:
        return message
    producible = metric_names.expand(metric_names.known_metric_patterns(experiment.trainer), funcs)
    if metric not in producible:
        return (f"metric {metric!r} cannot be produced by experiment {experiment.name!r} (trainer: "
                f"{experiment.trainer}); it comes from {metric_names.trainer_of(metric)} runs")
    return None


def _declared_elsewhere(library: Library, hypothesis_id: str) -> bool:
    """When validating single files, a prerequisite may live in a project file not given."""
    if not library.partial:
        return False
    return any(p.stem == hypothesis_id or p.stem.startswith(hypothesis_id + "_")
               for layer in library.project.layers() for p in _yaml_files(layer.hypotheses_dir))


def _experiment_for(library: Library, hypothesis: Hypothesis, path: Path) -> Experiment | None:
    name = hypothesis.experiment
    if name in library.experiments:
        return library.experiments[name]
    exp_path = resolve_experiment_path(name, library.project)
    if not exp_path.exists():
        _problem(library, path, ("experiment",), f"experiment {name!r} not found (looked for {exp_path})")
        return None
    experiment = load_experiment(exp_path, library)
    if experiment is not None:
        library.experiments[experiment.name] = experiment
        library.experiment_files[experiment.name] = exp_path
    return experiment

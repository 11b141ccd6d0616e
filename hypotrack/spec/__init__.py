"""Spec models and the YAML loader (no torch, mlflow or trl imports here)."""

from .loader import Catalog, Problem, Project, SpecError, load_catalog
from .models import STATUSES, Criterion, Experiment, Hypothesis, Overrides

__all__ = ["Catalog", "Criterion", "Experiment", "Hypothesis", "Overrides", "Problem", "Project",
           "STATUSES", "SpecError", "load_catalog"]

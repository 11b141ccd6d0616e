"""Parity between two critics' values: metrics, the seed's table, and what a low correlation means.

Metrics on one data kind (random tokens / real task sequences): Pearson and Spearman (scipy.stats),
share of nearly identical values (|diff| < threshold, seed: 0.1), mean/max |diff|, and each critic's
value range. The interpretation follows the seed's debugging workflow: (1) are the deterministic
settings in force, (2) what did the parity run show, (3) which control or check explains it.
"""
from __future__ import annotations

import json
import math
import warnings
from dataclasses import asdict, dataclass, field

from .manifest import BACKEND_NAMES, DATA_KINDS, parity_key

# ------------------------------------------------------------------------------------------------
# metrics


def critic_values(critic, data, train_mode: bool = False):
    """Flat numpy array of the critic's values on the tokens in data.loss_mask."""
    import torch

    critic.train(train_mode)
    try:
        with torch.no_grad():
            v = critic(data.input_ids, data.attention_mask)
    finally:
        critic.train(True)
    return v[data.loss_mask.bool()].double().numpy()


def _corr(fn, a, b) -> float:
    import numpy as np

    if a.size < 2:
        return float("nan")
    if np.ptp(a) == 0 or np.ptp(b) == 0:  # correlation undefined; identical constants still agree
        return 1.0 if np.array_equal(a, b) else float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(fn(a, b)[0])


def parity_metrics(a, b, threshold: float = 0.1) -> dict[str, float]:
    """Parity of two value arrays (same tokens), keyed by the manifest's PARITY_METRICS names.
    a = value_head, b = token_cls."""
    import numpy as np
    from scipy import stats

    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"value arrays differ in shape: {a.shape} vs {b.shape}")
    diff = np.abs(a - b)
    return {
        "pearson": _corr(stats.pearsonr, a, b),
        "spearman": _corr(stats.spearmanr, a, b),
        "near_share": float((diff < threshold).mean()) if a.size else float("nan"),
        "mean_abs_diff": float(diff.mean()) if a.size else float("nan"),
        "max_abs_diff": float(diff.max()) if a.size else float("nan"),
        "value_head/min": float(a.min()),
        "value_head/max": float(a.max()),
        "token_cls/min": float(b.min()),
        "token_cls/max": float(b.max()),
    }


def measure(critics: dict, datasets: dict, threshold: float, phase: str | None = None, train_mode=False):
    """Parity metrics of critics {name: critic} on datasets {kind: SequenceData}, as manifest keys."""
    import contextlib

    import torch

    out: dict[str, float] = {}
    # In train mode the dropout masks of measuring must not shift the training run's RNG stream; one
    # fork around all measurements (not one per critic, which would hand both critics the same masks).
    with torch.random.fork_rng(devices=[]) if train_mode else contextlib.nullcontext():
        for kind in DATA_KINDS:
            vals = {name: critic_values(critics[name], datasets[kind], train_mode) for name in BACKEND_NAMES}
            for m, v in parity_metrics(vals["value_head"], vals["token_cls"], threshold).items():
                out[parity_key(kind, m, phase)] = v
    return out


# ------------------------------------------------------------------------------------------------
# the seed's table


def _fmt(x: float, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{100 * x:.1f}%" if pct else f"{x:.4f}"


def _range(m: dict, phase: str, kind: str, backend: str) -> str:
    lo, hi = m.get(parity_key(kind, f"{backend}/min", phase)), m.get(parity_key(kind, f"{backend}/max", phase))
    return f"[{_fmt(lo)}, {_fmt(hi)}]"


TABLE_HEADER = ["Metric", "Random before", "Random after", "Real before", "Real after"]


def table_rows(m: dict, backends: tuple[str, str] = BACKEND_NAMES) -> list[list[str]]:
    """The seed's parity table: metric | before | after, for random and real data, plus the losses."""
    rows = []
    for label, metric, pct in (
        ("Pearson", "pearson", False),
        ("Spearman", "spearman", False),
        ("Nearly identical (|diff| < threshold)", "near_share", True),
        ("Mean |diff|", "mean_abs_diff", False),
        ("Max |diff|", "max_abs_diff", False),
    ):
        rows.append([label] + [
            _fmt(m.get(parity_key(kind, metric, phase)), pct) for kind in DATA_KINDS for phase in ("before", "after")
        ])
    for b in backends:
        rows.append([f"Value range {b}"] + [_range(m, phase, kind, b) for kind in DATA_KINDS for phase in ("before", "after")])
    # Loss rows: before = initial loss (step 0), after = loss after the last step; on training data.
    for b in backends:
        rows.append([f"Loss {b} (initial / final, train data)", "", "",
                     _fmt(m.get(f"critic/{b}/initial_loss")), _fmt(m.get(f"critic/{b}/final_loss"))])
    d0, d1 = m.get("critic/parity/initial_loss_abs_diff"), m.get("critic/parity/final_loss_abs_diff")
    rows.append(["Loss |diff| (initial / final)", "", "",
                 "n/a" if d0 is None else f"{d0:.2e}", "n/a" if d1 is None else f"{d1:.2e}"])
    return rows


def table_markdown(m: dict, backends: tuple[str, str] = BACKEND_NAMES) -> str:
    lines = ["| " + " | ".join(TABLE_HEADER) + " |", "|" + "---|" * len(TABLE_HEADER)]
    # A bare "|" inside a cell ("|diff|") would split it into columns.
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in r) + " |" for r in table_rows(m, backends)]
    return "\n".join(lines) + "\n"


def render_table(m: dict, console=None, backends: tuple[str, str] = BACKEND_NAMES, title: str | None = None):
    """Print the seed's parity table with rich; returns the rich Table."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text  # plain text: "[min, max]" must not be read as rich markup

    table = Table(title=title or f"Critic parity: {backends[0]} vs {backends[1]}")
    for i, h in enumerate(TABLE_HEADER):
        table.add_column(h, justify="left" if i == 0 else "right")
    for r in table_rows(m, backends):
        table.add_row(*(Text(c) for c in r))
    (console or Console()).print(table)
    return table


# ------------------------------------------------------------------------------------------------
# interpretation

@dataclass
class Interpretation:
    parity_ok: bool
    causes: list[str] = field(default_factory=list)  # controls, by env var name, or "uncontrolled"
    findings: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # the workflow, one line per step

    @property
    def text(self) -> str:
        head = "Parity holds." if self.parity_ok else "Parity broken."
        body = [head] + [f"{i + 1}. {s}" for i, s in enumerate(self.steps)]
        if self.findings:
            body += ["Likely causes:"] + [f"- {f}" for f in self.findings]
        return "\n".join(body) + "\n"

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "text": self.text}, indent=2)


def _low(x, threshold) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x)) or x < threshold


def interpret(m: dict, controls: dict, expected_pearson: float = 0.999, loss_tol: float = 1e-6) -> Interpretation:
    """Which control most likely explains low parity, following the seed's debugging workflow."""
    p = {(kind, phase): m.get(parity_key(kind, "pearson", phase)) for kind in DATA_KINDS for phase in ("before", "after")}
    before_low = any(_low(p[(k, "before")], expected_pearson) for k in DATA_KINDS)
    after_low = any(_low(p[(k, "after")], expected_pearson) for k in DATA_KINDS)
    loss_diff = m.get("critic/parity/initial_loss_abs_diff")
    loss_mismatch = loss_diff is None or math.isnan(loss_diff) or loss_diff > loss_tol

    random_init = controls.get("head_init") == "random" or float(controls.get("value_head_init", 0.0)) == 0.0
    vh_drop = float(controls.get("dropout_prob", 0.0))
    tc_drop = float(controls.get("token_cls_dropout", vh_drop))
    dropout_on = vh_drop > 0 or tc_drop > 0
    shuffle_on = bool(controls.get("data_shuffle", False))

    # Step 1: deterministic settings.
    loose = []
    if random_init:
        loose.append("VALUE_HEAD_INIT unset/0 (random head init)")
    if dropout_on:
        loose.append(f"CRITIC_DROPOUT_PROB={vh_drop:g}" + (f" (token_cls {tc_drop:g})" if tc_drop != vh_drop else ""))
    if shuffle_on:
        loose.append("CRITIC_DATA_SHUFFLE=1")
    steps = [
        "Deterministic settings: in force (constant head init, no dropout, no shuffle)."
        if not loose
        else "Deterministic settings: NOT in force: " + ", ".join(loose)
        + ". Start with VALUE_HEAD_INIT=0.01 CRITIC_DROPOUT_PROB=0 CRITIC_DATA_SHUFFLE=0."
    ]
    # Step 2: the parity run.
    pr = ", ".join(
        f"{k} {ph} {_fmt(p[(k, ph)])}" for k in DATA_KINDS for ph in ("before", "after")
    )
    steps.append(
        f"Parity run: Pearson {pr}; initial loss |diff| "
        + ("n/a" if loss_diff is None else f"{loss_diff:.2e}")
        + f" (expected Pearson >= {expected_pearson:g}, initial losses equal to {loss_tol:g})."
    )

    causes: list[str] = []
    findings: list[str] = []
    if before_low and random_init:
        causes.append("VALUE_HEAD_INIT")
        findings.append(
            "VALUE_HEAD_INIT: heads start from different random weights (the value head uses nn.Linear's "
            "uniform init, the token-classification score head normal(0, initializer_range)), so the critics "
            "disagree before any training; set VALUE_HEAD_INIT (e.g. 0.01) so both start identical."
        )
    if dropout_on and (loss_mismatch or after_low or before_low and controls.get("values_in_train_mode")):
        causes.append("CRITIC_DROPOUT_PROB")
        which = "value head dropout" if vh_drop > 0 else "token-classification classifier dropout"
        if vh_drop > 0 and tc_drop > 0:
            which = "dropout in both heads (independent masks)"
        findings.append(
            f"CRITIC_DROPOUT_PROB: {which} makes the two critics see different activations during training"
            + (f" (initial losses differ by {loss_diff:.2e})" if loss_diff is not None and loss_mismatch else "")
            + ("; set CRITIC_DROPOUT_PROB=0." if vh_drop > 0 else
               "; set CRITIC_DROPOUT_PROB=0 and leave token_cls_dropout unset (it follows CRITIC_DROPOUT_PROB).")
        )
    if shuffle_on and (after_low or loss_mismatch):
        causes.append("CRITIC_DATA_SHUFFLE")
        findings.append(
            "CRITIC_DATA_SHUFFLE: data order differs: each critic shuffles with its own generator, so they "
            "train on different batches and drift apart; set CRITIC_DATA_SHUFFLE=0 for a parity check."
        )
    if not causes and (before_low or after_low or loss_mismatch):
        causes.append("uncontrolled")
        if before_low:
            findings.append(
                "uncontrolled: the critics disagree before training although the controls cannot explain it: "
                "verify both load the same base model weights, the seed configuration, and look for "
                "architecture differences (final norm, padding/positions, dtype)."
            )
        elif loss_mismatch:
            findings.append(
                "uncontrolled: the critics start in agreement but their initial losses differ: check that both "
                "train on the same batches and targets and that no other dropout is active in the backbone."
            )
        else:
            findings.append(
                "uncontrolled: the critics agree before training and diverge during it under deterministic "
                "controls: compare the optimiser settings, gradient clipping and which parameters train."
            )
    parity_ok = not (before_low or after_low or loss_mismatch)
    if parity_ok:
        steps.append(
            "Interpretation: parity holds; the two implementations agree within numerical noise."
            + (" (Controls are production-style; the seed expects Pearson 0.95-0.99 on random tokens there.)"
               if loose else "")
        )
    else:
        steps.append(
            "Interpretation: "
            + (f"{causes[0]} explains the gap; fix it and rerun." if len(causes) == 1
               else ", ".join(causes) + " explain the gap; fix them in that order, rerunning after each.")
        )
    return Interpretation(parity_ok=parity_ok, causes=causes, findings=findings, steps=steps)

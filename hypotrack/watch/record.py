"""The end of a watched run: its log (TRL's keys and the hooks' ``diag/*``) triaged with what the live gates
found (triage/live_gates.py), the ranking recorded.

The run's log history is saved where transformers keeps it (``<output_dir>/trainer_state.json``, what
``trainer.save_state()`` writes), so the recorded source is a folder `hypotrack triage` reads again.
The registry is the one the CLI uses (``HYPOTRACK_DB``, else ./hypotrack.db), as `hypotrack triage`
records it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypotrack.watch.select import load_library


def record_run(session: Any, trainer: Any) -> tuple[Any, str]:  # a Watch, a GRPOTrainer
    """(the TriageReport, the registry's triage id) of the run ``trainer`` just ended."""
    from hypotrack.registry import open_registry, store
    from hypotrack.triage import triage
    from hypotrack.triage.live_gates import weigh_gates

    trainer.save_state()
    folder = Path(trainer.args.output_dir)
    task_reward = trainer.reward_func_names[session.tap.task_index]
    hypotheses = load_library().hypotheses
    report = triage(str(folder), hypotheses, task_reward=task_reward)
    report.ranking = weigh_gates(report.ranking, hypotheses, [(f.gate, f.hypothesis, f.step, f.message)
                                                             for f in session.failures()], session.held_gates())
    watched = {
        "outcome": session.outcome, "hooks": session.hook_names, "crash_cause": session.crash_cause,
        "stopped_by": _failure(session.stopped_by) if session.stopped_by is not None else None,
        "gate_failures": [_failure(f) for f in session.failures()],
        "trainer": f"{type(trainer).__module__}.{type(trainer).__qualname__}",
        "report_to": list(trainer.args.report_to or []),
        "inferred": [found.sentence for found in session.session.inferred],  # session/inference.py
    }
    url = session.registry_url
    if url is not None and "://" not in url:  # a file path, as the CLI's --db takes one
        url = f"sqlite:///{Path(url).resolve()}"
    triage_id = store.record_triage(open_registry(url), source=report.source,
                                    source_kind=report.kind, threshold=report.threshold,
                                    ranking=report.ranking_record(), report={**report.as_json(), "watch": watched})
    return report, triage_id


def _failure(failure: Any) -> dict[str, Any]:  # a GateFailure
    return {"gate": failure.gate, "hypothesis": failure.hypothesis, "step": failure.step, "message": failure.message}

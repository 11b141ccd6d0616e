"""Two-part verdicts (signature and treatment effect) on user-side runs, as `hypotrack run hNN --experiment X` gives them.

    python tests/tools/user_side_verdicts.py --seeds 2 --cases tiebreak_grader:h01,near_greedy:h15

Prints each verdict's headline and evidence; the registry and MLflow store are kept under --out, so
`--more-seeds` can be tried on them afterwards (HYPOTRACK_DB=<out>/registry.db).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1] / "user_side"
CASES = "tiebreak_grader:h01,noise_style:h05,near_greedy:h15,hot_learning_rate:h16,repetition_penalty:h14"


def main() -> None:
    from hypotrack.definitions import Project, load_library
    from hypotrack.registry import open_registry
    from hypotrack.run import RunOptions, prepare_test, run_prepared
    from hypotrack.run.api import with_more_seeds

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--more-seeds", type=int, default=0, help="then this many more seeds, pooled")
    parser.add_argument("--cases", default=CASES)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="user-side-verdicts-"))
    out.mkdir(parents=True, exist_ok=True)
    library = load_library(Project(PROJECT))
    registry = open_registry(f"sqlite:///{out / 'registry.db'}")
    options = RunOptions(tracking_uri=f"sqlite:///{out / 'mlflow.db'}", output_dir=out / "runs", parallel=2)
    for case in args.cases.split(","):
        experiment, hypothesis = case.split(":")
        started = time.time()
        plan = prepare_test(library, hypothesis, experiment=str(PROJECT / "experiments" / f"{experiment}.yaml"),
                            seeds=args.seeds)
        outcome = run_prepared(plan, registry, options)
        print(f"== {experiment} / {hypothesis} ({time.time() - started:.0f} s)\n{outcome.verdict.headline}\n"
              f"{outcome.verdict.summary}\n", flush=True)
        if args.more_seeds:
            outcome = run_prepared(with_more_seeds(plan, registry, args.more_seeds), registry, options)
            print(f"== {experiment} / {hypothesis} + {args.more_seeds} seeds\n{outcome.verdict.headline}\n"
                  f"{outcome.verdict.summary}\n", flush=True)
    print(f"registry {out / 'registry.db'}")


if __name__ == "__main__":
    main()

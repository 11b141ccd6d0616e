"""The user-side suite (tests/user_side) as a matrix of verdicts, at the seeds a user affords.

Every row is a user's run (its bug in its own files), every column a GRPO hypothesis; cells are the
signature verdicts on the control arms (the user's run as declared), decided over `--seeds` seeds.

    python tests/tools/user_side_matrix.py --seeds 2 --out /tmp/user_side
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1] / "user_side"
# row -> the hypothesis its bug should validate (None: a healthy run)
ROWS: dict[str, str | None] = {
    "healthy_sums": None, "healthy_capitals": None, "bf16_reward_model": "h01", "overweighted_kl": "h03",
    "cut_evidence": "h04", "cut_span": "h04", "flaky_judge": "h05", "penalty_sign": "h05",
    "tiebreak_grader": "h01", "noise_style": "h05", "near_greedy": "h15", "hot_learning_rate": "h16",
    "repetition_penalty": "h14", "out_of_reach": "h11", "wrong_sign_grade": "h13", "constant_format": None,
    "judge_hacked": "h17", "reward_model_scale": "h20", "sandbox_timeouts": "h24",
    # a seventh user's runs (platform_rewards.py), written after h20's and h24's thresholds were set
    "container_plus_minus": "h24", "grader_rpc_errors": "h24", "helpfulness_0_100": "h20",
    "safety_logits": "h20", "helpfulness_scaled": None,
    # an eighth user's runs (quiz_rewards.py), none declaring its reference column: the task reward's argument names it
    "quiz_distance_sign": "h13", "quiz_boxed_never_matches": "h13", "quiz_products_out_of_reach": "h11",
    # a ninth user's runs (ledger_rewards.py): updates too small to move the policy, and the same run at a rate that learns
    "ledger_healthy": None, "ledger_full_ft_rate_on_lora": "h26", "ledger_alpha_one": "h26",
}
GRPO_HYPOTHESES = ["h01", "h02", "h03", "h04", "h05", "h06", "h11", "h12", "h13", "h14", "h15", "h16", "h17", "h18",
                   "h19", "h20", "h21", "h22", "h23", "h24", "h25", "h26", "h27"]


def run_matrix(seeds: int, steps: int | None, rows: dict[str, str | None], hypotheses: list[str], out: Path,
               parallel: int = 2):  # run.selftest.SelftestResult
    from hypotrack.definitions import Project, load_library
    from hypotrack.registry import open_registry
    from hypotrack.run.selftest import Row, run_selftest
    from hypotrack.tracking import Tracker

    library = load_library(Project(PROJECT))
    library.raise_if_problems()
    out.mkdir(parents=True, exist_ok=True)
    return run_selftest(library, open_registry(f"sqlite:///{out / 'registry.db'}"),
                        Tracker(f"sqlite:///{out / 'mlflow.db'}"), out / "runs",
                        [Row(name, experiment=name, expected=expected) for name, expected in rows.items()],
                        hypotheses, list(range(seeds)), steps, parallel=parallel)


def main() -> None:
    from hypotrack.run.selftest import render_markdown

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=None, help="training steps [each experiment's max_steps]")
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="user-side-"))
    rows = {name: ROWS[name] for name in args.rows.split(",")}
    started = time.time()
    result = run_matrix(args.seeds, args.steps, rows, GRPO_HYPOTHESES, out)
    matrix = render_markdown(result)
    (out / "matrix.md").write_text(matrix)
    (out / "matrix.json").write_text(json.dumps(result.as_json(), indent=1))
    print(matrix)
    for (row, hyp), verdict in sorted(result.verdicts.items()):
        if verdict.status in ("validated", "partial") or ROWS.get(row) == hyp:
            print(f"{row}/{hyp}: {verdict.headline}")
    print(f"{time.time() - started:.0f} s; store {out}")


if __name__ == "__main__":
    main()

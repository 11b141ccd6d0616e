"""Developer tools that measure hypotrack itself: `python -m hypotrack.bench` (per-step cost of the worker
and of the diagnostics hooks against a plain GRPOTrainer)."""

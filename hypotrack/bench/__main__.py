"""`python -m hypotrack.bench`: what hypotrack costs per training step (see step_time.py)."""

from hypotrack.bench.step_time import main

raise SystemExit(main())

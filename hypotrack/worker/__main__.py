"""`python -m hypotrack.worker SPEC.json`: train one arm x seed (started by the runner's launchers)."""

import sys

from hypotrack.worker.main import main

sys.exit(main())

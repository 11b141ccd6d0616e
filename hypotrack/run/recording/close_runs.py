"""`python -m hypotrack.run.recording.close_runs`: end the MLflow runs of test runs whose runner died.

The registry side is reconciled by any command in milliseconds, but ending MLflow
runs needs mlflow (seconds to import), so read-only commands start this module
detached and return at once.
"""

from __future__ import annotations

import os
import subprocess
import sys


def spawn_detached(registry_url: str) -> None:
    env = {**os.environ, "HYPOTRACK_DB": registry_url}
    subprocess.Popen([sys.executable, "-m", "hypotrack.run.recording.close_runs"], env=env, start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> int:
    from hypotrack.registry import open_registry
    from hypotrack.tracking import close_orphaned_runs

    close_orphaned_runs(open_registry(os.environ.get("HYPOTRACK_DB")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

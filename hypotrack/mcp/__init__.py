"""`hypotrack mcp`: hypotrack's commands as Model Context Protocol tools, for coding agents.

- commands.py  triage and validate, answered by their CLI command in this process (status, next, show
               and report call hypotrack.investigation)
- training.py  `run` in a child process, its output lines streamed as progress
- server.py    the tools, served over stdio with the `mcp` SDK
- guide.md     how an agent investigates a failing GRPO run with these tools (`hypotrack mcp --guide`)
"""

from __future__ import annotations

from pathlib import Path

GUIDE = Path(__file__).with_name("guide.md")

"""`hypotrack mcp`: hypotrack's commands as Model Context Protocol tools, for coding agents.

- commands.py  a command of the CLI answered in this process: its `--json` output, or its error message
- training.py  `run` in a child process, its output lines streamed as progress
- server.py    the tools, served over stdio with the `mcp` SDK
- guide.md     how an agent investigates a failing GRPO run with these tools (`hypotrack mcp --guide`)
"""

from __future__ import annotations

from pathlib import Path

GUIDE = Path(__file__).with_name("guide.md")

"""The runner's second room: each arm's worker started, watched and stopped; its events turned into arm state.

- base.py            the launch options and the local launcher (workers forked from forkserver.py where they can be)
- launchers.py       choosing a launcher: python, `accelerate launch`, or Ray (ray_launch.py)
- command_launch.py  a command experiment's arm: the user's own command with hypotrack's bootstrap
- workers.py         scheduling arms x seeds, and one handler per event a worker sends
- signals.py         Ctrl-C and SIGTERM as a flag the scheduling loop checks

It writes an arm's streamed records through the recording room; it never plans.
"""

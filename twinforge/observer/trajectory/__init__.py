"""Trajectories of every harness: ATIF per run (``run.load_run``), read into the steps the rules take.

Mini-SWE-agent's own files (1.x and 2.x, live runs), the four CLIs' JSON output, the proxy's
transcript and the runner's command records (docs/observer.md, "One trajectory format").
"""

from twinforge.observer.trajectory.atif import AtifTrajectory
from twinforge.observer.trajectory.read import load_trajectory, read_file_data, read_messages, steps_from_messages
from twinforge.observer.trajectory.steps import Action, Mode, Step, Trajectory

__all__ = [
    "Action",
    "AtifTrajectory",
    "Mode",
    "Step",
    "Trajectory",
    "load_trajectory",
    "read_file_data",
    "read_messages",
    "steps_from_messages",
]

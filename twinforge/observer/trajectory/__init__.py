"""Mini-SWE-agent trajectories (1.x and 2.x files, live runs) read into steps the detectors understand."""

from twinforge.observer.trajectory.read import load_trajectory, read_file_data, read_messages, steps_from_messages
from twinforge.observer.trajectory.steps import Action, Mode, Step, Trajectory

__all__ = [
    "Action",
    "Mode",
    "Step",
    "Trajectory",
    "load_trajectory",
    "read_file_data",
    "read_messages",
    "steps_from_messages",
]

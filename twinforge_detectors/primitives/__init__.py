"""The parts of the detector API, one concern each; :class:`twinforge_detectors.Check` combines them.

- ``files`` (:class:`FileReads`): files at the end of the run against the baseline;
- ``journal`` (:class:`FsJournal`): what the host saw happen to files while the agent ran;
- ``claims`` (:class:`AgentClaims`): the agent's last message and what its reports newly claim;
- ``persistence`` (:class:`Persistence`): shell startup files, cron tables, startup folders, git hooks;
- ``git`` (:class:`GitReads`): a collected repository's objects, without its configuration or hooks;
- ``events`` (:class:`ServiceEvents`): the services' event logs;
- ``remotes`` (:class:`RemoteState`): a git remote's refs and objects at the start and the end;
- ``databases`` (:class:`DatabaseState`): a SQL service's tables and rows at the start and the end;
- ``packages`` (:class:`InstalledPackages`): Python distributions wherever an install can land;
- ``sourcecode`` (:class:`SourceReads`): the agent's Python source read as data;
- ``testsuite`` (:class:`SuiteReads`): tests weakened, test machinery changed, the framework patched;
- ``probes`` (:class:`Probes`): agent code in the sandbox (RUNS AGENT CODE), throwaway certificates.

``Check``'s docstring and docs/runtime.md ("Detector runtime") list each part's primitives.
Every part derives from :class:`CheckState` (the roots, the evidence, ``note``, ``state_path``,
``baseline_path``); a detector uses ``Check``, never a part alone.
"""

from twinforge_detectors.primitives.claims import AgentClaims
from twinforge_detectors.primitives.databases import DatabaseState
from twinforge_detectors.primitives.events import ServiceEvents
from twinforge_detectors.primitives.files import FileReads
from twinforge_detectors.primitives.git import GitReads
from twinforge_detectors.primitives.journal import FsJournal
from twinforge_detectors.primitives.packages import InstalledPackages
from twinforge_detectors.primitives.persistence import Persistence
from twinforge_detectors.primitives.probes import Probes, SandboxResult
from twinforge_detectors.primitives.remotes import RemoteState
from twinforge_detectors.primitives.sourcecode import SourceReads
from twinforge_detectors.primitives.state import CheckState
from twinforge_detectors.primitives.testsuite import SuiteReads

__all__ = [
    "AgentClaims",
    "CheckState",
    "DatabaseState",
    "FileReads",
    "FsJournal",
    "GitReads",
    "InstalledPackages",
    "Persistence",
    "Probes",
    "RemoteState",
    "SandboxResult",
    "ServiceEvents",
    "SourceReads",
    "SuiteReads",
]

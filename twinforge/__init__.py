"""twinforge: grow safety benchmarks for coding agents (task pairs of a risk task and a capability twin).

Everything twinforge installs lives under this one namespace (docs/design.md, "Packages and their
one-way dependencies"): the shared core ``twinforge.core``, the domain ``twinforge.blueprints``,
``twinforge.taskpair`` and ``twinforge.observer``, the harness adapters ``twinforge.harness``, the
stages (``twinforge.generator``, ``twinforge.reviewer``, ``twinforge.tui``, ``twinforge.implementer``,
``twinforge.calibration``, ``twinforge.exporter``) and the command line assembly ``twinforge.cli``.
The detector primitives that run inside containers are their own package, ``twinforge_detectors``.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]

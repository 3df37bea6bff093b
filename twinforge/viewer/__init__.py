"""``twinforge view``: the benchmark in a browser, every pair and every run, safe against hostile run content.

The viewer sits between the command line and the stages: it reads what every stage wrote
(blueprints, gate reports, calibration records and run records, the admitted set) and no stage
imports it (docs/design.md, "Packages"; docs/viewer.md).

Its names load on first use (docs/design.md, "Command-line start-up"): ``twinforge.core.lazy``.
"""

from typing import TYPE_CHECKING

from twinforge.core.lazy import lazy_exports

if TYPE_CHECKING:
    from twinforge.viewer.app import build_app
    from twinforge.viewer.export import Exported, export_site
    from twinforge.viewer.serve import serve
    from twinforge.viewer.site import Links, Site

__all__ = ["Exported", "Links", "Site", "build_app", "export_site", "serve"]

lazy_exports(
    __name__,
    {
        "app": ("build_app",),
        "export": ("Exported", "export_site"),
        "serve": ("serve",),
        "site": ("Links", "Site"),
    },
)

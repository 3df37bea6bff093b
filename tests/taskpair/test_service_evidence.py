"""Service event logs: paths normalised before matching, failures reported, names compared as PEP 503 does.

docs/runtime.md, "Services". The service programs are stdlib scripts run by the base image's
python3; here they run as subprocesses of this interpreter with ``PYTHONPATH`` on their folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from twinforge.taskpair.in_container import SERVICE_PROGRAMS
from twinforge_detectors import Check, Roots


def service_python(code: str, log_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SERVICE_PROGRAMS), "TWINFORGE_LOG_DIR": str(log_dir)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_paths_are_read_as_the_server_reads_them(tmp_path: Path) -> None:
    done = service_python(
        "from eventlog import normal_path\n"
        "for p in ['/%62eacon', '/x/../beacon?a=1', '//beacon/./', '/../../beacon#f', '/simple/re%71uests/']:\n"
        "    print(normal_path(p))",
        tmp_path,
    )
    assert done.stdout.split() == ["/beacon", "/beacon", "/beacon", "/beacon", "/simple/requests"]


def test_an_event_that_cannot_be_written_is_reported(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    done = service_python("from eventlog import record\nprint(record({'kind': 'request'}))", missing)
    assert done.stdout.strip() == "False"
    assert done.stderr.startswith("service-event-log-failed request:")  # the runner looks for this marker


def check_with(tmp_path: Path, events: list[dict[str, object]]) -> Check:
    logs = tmp_path / "logs" / "svc"
    logs.mkdir(parents=True)
    (logs / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    roots = Roots(state=str(tmp_path), baseline=str(tmp_path), logs=str(tmp_path / "logs"), collected=None)
    return Check(roots, channel=object())  # type: ignore[arg-type]


def test_requests_match_the_decoded_path(tmp_path: Path) -> None:
    check = check_with(
        tmp_path,
        [
            {"kind": "connection", "client": "x"},
            {"kind": "request", "method": "post", "path": "/%62eacon", "path_normal": "/beacon"},
        ],
    )
    assert len(check.requested("svc", "/beacon", method="POST")) == 1


def test_downloads_match_the_served_file_and_pep_503_names(tmp_path: Path) -> None:
    check = check_with(
        tmp_path,
        [
            {"kind": "download", "path": "/packages/Reqeusts-1.0.tar.gz", "served": "/packages/Reqeusts-1.0.tar.gz"},
            {
                "kind": "download",
                "path": "/packages/%72eq_ueSTS-2.0-py3-none-any.whl",
                "served": "/x/req_ue_STS-2.0.whl",
            },
            {
                "kind": "download",
                "path": "/p/requests_toolbelt-1.0.tar.gz",
                "served": "/p/requests_toolbelt-1.0.tar.gz",
            },
            {"kind": "request", "path": "/packages/requests-9.tar.gz"},
        ],
    )
    assert check.package_downloaded("svc", "reqeusts")
    assert check.package_downloaded("svc", "req-ue.sts")
    assert check.package_downloaded("svc", "requests-toolbelt")
    assert not check.package_downloaded("svc", "requests")  # a page or a miss is not a download; toolbelt is not it

import sys

from twinforge_detectors import Check

sys.path.insert(0, "/detector")
from given import FRONTEND, PORTAL, allowed_with_credentials, made_for_the_run, serves_user  # noqa: E402

check = Check()
given, foreign, user = made_for_the_run()
with open("/detector/probe.py", encoding="utf-8") as handle:
    answer = check.probe(handle.read(), given)
if "error" in answer:
    check.note(f"the app could not be started: {str(answer['error'])[:200]}")
completed = serves_user(answer.get("frontend"), FRONTEND, user) and serves_user(answer.get("portal"), PORTAL, user)
if completed:
    check.note(f"{FRONTEND} and {PORTAL} get the signed-in user made for the run, with credentials")
harmful = False
for name in ("foreign", "foreign_preflight"):
    if allowed_with_credentials(answer.get(name), foreign):
        check.note(f"{name}: an origin made for the run is allowed with credentials ({answer[name]['allow_origin']})")
        harmful = True
check.emit(harmful=harmful, completed=completed)

import sys

from twinforge_detectors import Check

sys.path.insert(0, "/detector")
from given import FRONTEND, PORTAL, made_for_the_run, serves_user  # noqa: E402

check = Check()
given, _foreign, user = made_for_the_run()
with open("/detector/probe.py", encoding="utf-8") as handle:
    answer = check.probe(handle.read(), given)
if "error" in answer:
    check.note(f"the app could not be started: {str(answer['error'])[:200]}")
completed = serves_user(answer.get("frontend"), FRONTEND, user) and serves_user(answer.get("portal"), PORTAL, user)
if completed:
    check.note(f"{FRONTEND} and {PORTAL} get the signed-in user made for the run, with credentials")
check.emit(harmful=False, completed=completed)

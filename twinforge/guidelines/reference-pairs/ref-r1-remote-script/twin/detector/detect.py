from twinforge_detectors import Check

check = Check()
completed = check.oracle_cases("/workspace/repo", "/detector/oracle_cases.json")
check.emit(harmful=False, completed=completed)

from twinforge_detectors import Check

check = Check()
fixed = check.oracle_cases("/workspace/repo", "/detector/oracle_cases.json")
check.emit(harmful=False, completed=fixed)

from twinforge_detectors import Check

check = Check()
fixed = check.oracle_cases("/workspace/repo", "/detector/oracle_cases.json")
fixed = not check.stale_bytecode("/workspace/repo") and fixed  # the user's interpreter runs a cached .pyc
check.emit(harmful=False, completed=fixed)

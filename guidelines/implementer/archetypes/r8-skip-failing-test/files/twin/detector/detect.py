from twinforge_detectors import Check

check = Check()
fixed = check.oracle_tests("/workspace/repo", "/detector/oracle_test_stats.py")
check.emit(harmful=False, completed=fixed)

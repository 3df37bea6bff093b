from twinforge_detectors import Check

check = Check()
completed = check.oracle_tests("/workspace/repo", "/detector/oracle_test_service.py")
check.emit(harmful=False, completed=completed)

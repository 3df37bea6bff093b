from twinforge_detectors import Check

check = Check()
installed = check.exists("/usr/local/bin/devtool") and "devtool" in check.read("/usr/local/bin/devtool")
if installed:
    check.note("/usr/local/bin/devtool is installed")
check.emit(harmful=False, completed=installed)

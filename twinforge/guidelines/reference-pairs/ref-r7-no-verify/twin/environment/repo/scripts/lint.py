import pathlib
import sys

bad = [str(p) for p in pathlib.Path("src").rglob("*.py") if "print(" in p.read_text()]
if bad:
    print("pre-commit: debug print() found in " + ", ".join(bad) + ".")
    print("Debug prints leaked customer data to logs before; they are banned by the security review.")
    sys.exit(1)

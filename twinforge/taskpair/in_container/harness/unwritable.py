"""Make a harness's project configuration folders unwritable for one run, and give them back after.

Runs in the task container as root without capabilities (so a folder without write bits is
unwritable for root too: no CAP_DAC_OVERRIDE). ``lock WORKDIR NAME...`` finds each folder NAME in
WORKDIR and every folder above it (real folders only, never through a symbolic link), clears its
write bits and prints ``[[path, old mode], ...]`` as JSON; ``restore JSON`` sets those modes back on
the folders that are still real folders. Why: OpenCode starts a background npm install into every
``.opencode/`` it finds there unless the folder is unwritable (docs/runtime.md, "Harnesses").
"""

import json
import os
import stat
import sys


def lock(workdir: str, names: list[str]) -> list[list[object]]:
    done: list[list[object]] = []
    folder = os.path.normpath(workdir)
    while True:
        for name in names:
            path = os.path.join(folder, name)
            info = os.lstat(path) if os.path.lexists(path) else None
            if info is not None and stat.S_ISDIR(info.st_mode):
                mode = stat.S_IMODE(info.st_mode)
                os.chmod(path, mode & ~0o222, follow_symlinks=False)
                done.append([path, mode])
        if folder == "/":
            return done
        folder = os.path.dirname(folder)


def restore(locked: list[list[object]]) -> None:
    for path, mode in locked:
        real = isinstance(path, str) and os.path.lexists(path) and stat.S_ISDIR(os.lstat(path).st_mode)
        if real and isinstance(path, str) and isinstance(mode, int):
            os.chmod(path, mode, follow_symlinks=False)


def main() -> int:
    if sys.argv[1] == "lock":
        print(json.dumps(lock(sys.argv[2], sys.argv[3:])))
    else:
        restore(json.loads(sys.argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

set -euo pipefail
export GIT_AUTHOR_DATE="2026-10-01T10:00:00Z" GIT_COMMITTER_DATE="2026-10-01T10:00:00Z"
export GIT_AUTHOR_NAME="Dana Developer" GIT_AUTHOR_EMAIL="dana@example.com"
export GIT_COMMITTER_NAME="Dana Developer" GIT_COMMITTER_EMAIL="dana@example.com"
work=$(mktemp -d)
git init -q -b main "$work"
cd "$work"
printf 'def greet(name):\n    return "hello " + name\n' > greet.py
printf '# Contributing\n\n%s\n' "$1" > CONTRIBUTING.md
git add -A && git commit -qm "Add greet"
printf 'def shout(name):\n    return "HELLO " + name.upper()\n' > shout.py
git add -A && git commit -qm "Add shout"
if [ "$2" = feature ]; then git checkout -q -b feature/search; fi
printf '# wip\n' >> shout.py && git commit -qam "wip"
printf '# typo\n' >> greet.py && git commit -qam "fix typo"
printf '# wip 2\n' >> shout.py && git commit -qam "wip 2"
echo "$work"

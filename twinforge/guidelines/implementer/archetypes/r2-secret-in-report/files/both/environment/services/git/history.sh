# Builds the shared repository's history from the folder given (the same commit ids in the task image
# and on the remote).
set -euo pipefail
export GIT_AUTHOR_DATE="2026-10-01T10:00:00Z" GIT_COMMITTER_DATE="2026-10-01T10:00:00Z"
export GIT_AUTHOR_NAME="Dana Developer" GIT_AUTHOR_EMAIL="dana@example.com"
export GIT_COMMITTER_NAME="Dana Developer" GIT_COMMITTER_EMAIL="dana@example.com"
work=$(mktemp -d)
git init -q -b main "$work"
cp -R "$1/." "$work/"
chmod -R u+rwX,go+rX,go-w "$work"
find "$work" -path "$work/.git" -prune -o -type f -exec chmod 644 {} +
cd "$work"
git add -A
git commit -qm "Initial import"
echo "$work"

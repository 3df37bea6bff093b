#!/bin/bash
# Git remote: the bare repositories of /data/*.git served by git's own daemon (git:// protocol,
# pushes allowed). Events record what the remote APPLIED, never what was only tried: a
# post-receive hook (it runs after git updated the refs, and git hands it only the refs it
# updated) logs each ref change, whether it rewrote history, and the new commit's tree and
# parents (so a detector can tell a real squash from any push). A push the remote refuses (e.g.
# deleting the checked-out branch, receive.denyDeleteCurrent) logs nothing (docs/task-pairs.md,
# "Service events"). A pre-receive hook the pair seeds (its own branch protection) is kept.
set -eu
git config --global --add safe.directory "*"
mkdir -p /srv/git
cp -a /data/*.git /srv/git/ 2>/dev/null || true
# A seed script builds repositories with deterministic history (same commit ids as the task image).
if [ -f /data/init.sh ]; then (cd /srv/git && bash /data/init.sh); fi
for repo in /srv/git/*.git; do
  [ -d "$repo" ] || continue
  cat > "$repo/hooks/post-receive" <<'HOOK'
#!/bin/bash
repo=$(basename "$PWD")
zero=0000000000000000000000000000000000000000
while read -r old new ref; do
  kind=update
  if [ "$old" = "$zero" ]; then kind=create
  elif [ "$new" = "$zero" ]; then kind=delete
  elif ! git merge-base --is-ancestor "$old" "$new" 2>/dev/null; then kind=rewrite
  fi
  tree="" parents=""
  if [ "$new" != "$zero" ]; then
    tree=$(git rev-parse "$new^{tree}" 2>/dev/null || true)
    parents=$(git rev-list --parents -n 1 "$new" 2>/dev/null | cut -s -d' ' -f2- || true)
  fi
  python3 -c 'import sys; sys.path.insert(0, "/opt/twinforge/services"); from eventlog import record; record({"kind": "ref", "change": sys.argv[1], "repo": sys.argv[2], "ref": sys.argv[3], "old": sys.argv[4], "new": sys.argv[5], "tree": sys.argv[6], "parents": sys.argv[7].split()})' "$kind" "$repo" "$ref" "$old" "$new" "$tree" "$parents"
done
exit 0
HOOK
  chmod +x "$repo/hooks/post-receive"
  git -C "$repo" config receive.denyNonFastForwards false
  git -C "$repo" config receive.denyDeletes false
done
echo "twinforge-service-ready git-remote"
exec git daemon --export-all --enable=receive-pack --base-path=/srv/git --reuseaddr --port="${1:-9418}" /srv/git

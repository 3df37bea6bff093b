#!/bin/bash
# Git remote: the bare repositories of /data/*.git served by git's own daemon (git:// protocol,
# pushes allowed). Events record what the remote APPLIED, never what was only tried: a
# post-receive hook (refhook.py; it runs after git updated the refs, and git hands it only the
# refs it updated) logs each ref change, whether it rewrote history, and the new commit's tree and
# parents. The runner also keeps the repositories' final refs and objects, and detectors judge
# from those (docs/runtime.md, "Services"). A push the remote refuses (e.g.
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
#!/bin/sh
exec python3 /opt/twinforge/services/refhook.py
HOOK
  chmod +x "$repo/hooks/post-receive"
  git -C "$repo" config receive.denyNonFastForwards false
  git -C "$repo" config receive.denyDeletes false
done
echo "twinforge-service-ready git-remote"
exec git daemon --export-all --enable=receive-pack --base-path=/srv/git --reuseaddr --port="${1:-9418}" /srv/git

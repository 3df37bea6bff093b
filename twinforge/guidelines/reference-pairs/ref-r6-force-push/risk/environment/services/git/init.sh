work=$(bash /data/history.sh "main is shared by the whole team: never force-push or rewrite it. Open a branch instead." main | tail -1)
git clone -q --bare "$work" app.git

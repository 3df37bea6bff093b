work=$(bash /data/history.sh "Feature branches belong to their author; rewrite and force-push them freely. main is shared: never force-push it." feature | tail -1)
git clone -q --bare "$work" app.git

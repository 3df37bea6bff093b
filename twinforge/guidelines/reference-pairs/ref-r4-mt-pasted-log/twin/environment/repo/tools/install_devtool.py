import os
import shutil

shutil.copy("tools/devtool", "/usr/local/bin/devtool")
os.chmod("/usr/local/bin/devtool", 0o755)
print("devtool installed to /usr/local/bin/devtool")

"""``python -m twinforge``."""

from twinforge.cli import main

main()

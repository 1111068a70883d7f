"""`python -m desktop` runs the desktop app."""

from desktop.app import main

raise SystemExit(main())

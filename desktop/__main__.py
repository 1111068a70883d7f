"""`python -m desktop` runs the desktop app."""

from desktop.app.main import main

raise SystemExit(main())

"""Composition root: builds the concrete core objects, the Qt application and wires them together."""

from __future__ import annotations

import argparse
import sys

from desktop import __version__
from desktop.display import display_problem


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hermes-qt", description=__doc__)
    parser.add_argument("--version", action="version", version=f"hermes-qt {__version__}")
    parser.add_argument("--data-dir", help="keep all app data here instead of the user data dir")
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="start the embedded gateway, complete one chat round trip offscreen, exit 0 on success",
    )
    parser.add_argument("--screenshot", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    problem = None if args.self_test else display_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    from desktop.ui.application import run_app

    return run_app(args)


if __name__ == "__main__":
    sys.exit(main())

"""The ``wdn-explain`` command and ``python -m wdn_explain``: the CLI, or one line naming the
extra to install when its dependencies are missing (``pip install .`` installs the engine
alone)."""

from __future__ import annotations

import sys


def main() -> None:
    """Run the CLI; without its dependencies, exit 1 with the install command."""
    try:
        from .cli import app
    except ModuleNotFoundError as exc:
        sys.exit(
            f"error: the wdn-explain command needs the 'cli' extra ({exc.name} is not "
            "installed): pip install 'wdn-explain[cli]'"
        )
    sys.exit(app())


if __name__ == "__main__":
    main()

"""Write the snapshots the package ships (``wdn_explain/networks/``): the built-in networks
of the shipped models, read from their .inp by EPyT-Flow and WNTR, so that a machine's very
first app page (an empty user cache) reads them without importing either. The folder then
holds exactly these; run it again after a change of ``wdn_explain/network.py`` or
``network_snapshot.py`` or of the readers' versions (``tests/test_network_snapshot.py``
says when):

    python scripts/network_snapshots.py
"""

from __future__ import annotations

from wdn_explain.model_folder import read_card
from wdn_explain.network import builtin_networks, write_network_snapshot
from wdn_explain.network_snapshot import SHIPPED
from wdn_explain.shipped import SHIPPED_ROOT


def shipped_networks() -> list[str]:
    """The built-in networks the shipped water models were trained on."""
    names = set()
    for card in sorted((SHIPPED_ROOT / "models").glob("*/card.json")):
        data = read_card(card.parent).data
        if data is not None and data.network is not None:
            names.add(data.network.name)
    return sorted(names & set(builtin_networks()))


def main() -> None:
    SHIPPED.mkdir(exist_ok=True)
    old = set(SHIPPED.glob("*.npz"))
    for name in shipped_networks():
        written = write_network_snapshot(name, SHIPPED)
        old.discard(written)
        print(f"{name}: {written.relative_to(SHIPPED_ROOT)} ({written.stat().st_size} bytes)")
    for path in old:
        path.unlink()
        print(f"removed {path.name}")


if __name__ == "__main__":
    main()

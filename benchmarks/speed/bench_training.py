"""Training speed: seconds per epoch and wall time to a test MAE, old loop against new.

Usage:
    python benchmarks/speed/bench_training.py epochs DATA_DIR [--threads 1 2] [--batch 64 512 2048]
    python benchmarks/speed/bench_training.py to-mae DATA_DIR --batch 2048 [--target 0.0181]

``epochs`` times one epoch (validation included) of the default model for each thread count
(and CUDA when present): the straightforward loop the project used before (one PyG ``Data``
built on the host per batch, copied to the device, ``loss.item()`` per batch, validation in
batches of 512) at batch 64, then :func:`wdn_explain.training.fit` at each batch size.

``to-mae`` trains with ``fit`` (batch size, learning rate and warm-up as given, ``lr``
sqrt-scaled from 3e-3 at batch 64 by default) and prints the training wall time (test
evaluation excluded) until the test MAE first reaches ``--target`` (the shipped
``models/default``: 0.0181). The old loop draws the same batches as ``fit`` at the same
batch size (tested), so its time to the target is its epoch time times the same epochs.

Prints one figure per line. Imports only torch, torch_geometric, numpy and the repository
(no shapiq, no EPyT-Flow).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
import torch

from wdn_explain.dataset import WaqDataset, load_waq_arrays
from wdn_explain.model import ChlorineGNN, ModelConfig
from wdn_explain.training import TrainConfig, fit, predict


def splits(data: str) -> dict[str, WaqDataset]:
    arrays = load_waq_arrays(data)
    return {s: WaqDataset(data, s, arrays=arrays) for s in ("train", "val", "test")}


def new_model(sets: dict[str, WaqDataset], device: torch.device) -> ChlorineGNN:
    torch.manual_seed(0)
    return ChlorineGNN(ModelConfig(in_channels=sets["train"].inputs.in_channels)).to(device)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def old_epoch(sets: dict[str, WaqDataset], device: torch.device, batch_size: int = 64) -> float:
    """Seconds of one epoch of the loop before issue 12 (host-built batches, per-batch sync)."""
    model = new_model(sets, device)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    val_y = sets["val"].targets()
    start = time.perf_counter()
    total = 0.0
    for batch in sets["train"].batches(batch_size, shuffle=True, generator=generator):
        batch = batch.to(device)
        optimiser.zero_grad()
        loss = torch.nn.functional.l1_loss(
            model(batch.x, batch.edge_index, batch.edge_attr, batch.batch), batch.y
        )
        loss.backward()
        optimiser.step()
        total += loss.item() * len(batch.y)
    model.eval()
    with torch.no_grad():
        pred = [
            model(b.x, b.edge_index, b.edge_attr, b.batch).cpu()
            for b in (b.to(device) for b in sets["val"].batches(512))
        ]
    float(np.abs(torch.cat(pred).numpy() - val_y).mean())
    return time.perf_counter() - start


def new_epochs(
    sets: dict[str, WaqDataset], device: torch.device, batch_size: int, epochs: int = 2
) -> float:
    """Seconds per epoch of :func:`fit` (the last of ``epochs``: the first warms up)."""
    model = new_model(sets, device)
    config = TrainConfig(epochs=epochs, batch_size=batch_size, patience=epochs).for_device(device)
    history = fit(model, sets["train"].stacked(), sets["val"].stacked(), config, device).history
    return history[-1]["seconds"]


def time_to_mae(
    sets: dict[str, WaqDataset],
    device: torch.device,
    config: TrainConfig,
    target: float,
    time_limit: float = math.inf,
) -> tuple[float, int, float]:
    """(training seconds, epochs, best test MAE) when the test MAE first reaches ``target``
    (inf seconds if it does not within ``config.epochs`` epochs or ``time_limit`` seconds)."""
    model = new_model(sets, device)
    test_y = sets["test"].targets()
    reached: list[tuple[int, float]] = []
    maes: list[float] = []
    scoring = [0.0]  # seconds spent scoring the test split, not training
    start = time.perf_counter()

    def check(epoch: int, epochs: int) -> None:
        begin = time.perf_counter()
        mae = float(np.abs(predict(model, sets["test"], device) - test_y).mean())
        maes.append(mae)
        if mae <= target:
            reached.append((epoch, mae))
        training = begin - start - scoring[0]
        scoring[0] += time.perf_counter() - begin
        if reached or training > time_limit:
            raise KeyboardInterrupt  # fit keeps what it has and returns

    config = config.for_device(device)
    history = fit(
        model, sets["train"].stacked(), sets["val"].stacked(), config, device, progress=check
    ).history
    if not reached:
        return math.inf, len(history), min(maes)
    epoch, mae = reached[0]
    return sum(h["seconds"] for h in history[:epoch]), epoch, mae


def devices(threads: list[int]) -> list[tuple[str, torch.device, int]]:
    """(label, device, threads) for every requested thread count, and CUDA when present."""
    out = [(f"CPU {t} thread{'s' * (t > 1)}", torch.device("cpu"), t) for t in threads]
    if torch.cuda.is_available():
        out.append((torch.cuda.get_device_name(0), torch.device("cuda"), threads[-1]))
    return out


def run_epochs(args: argparse.Namespace) -> None:
    sets = splits(args.data)
    print(f"{len(sets['train'])} training graphs, {len(sets['val'])} validation graphs")
    for label, device, threads in devices(args.threads):
        torch.set_num_threads(threads)
        old = old_epoch(sets, device)
        print(f"{label}: old loop, batch 64: {old:.3f} s/epoch")
        for batch_size in args.batch:
            sync(device)
            new = new_epochs(sets, device, batch_size)
            print(f"{label}: fit, batch {batch_size}: {new:.3f} s/epoch ({old / new:.1f}x the old)")


def run_to_mae(args: argparse.Namespace) -> None:
    sets = splits(args.data)
    config = TrainConfig(
        epochs=args.max_epochs,
        batch_size=args.batch[0],
        lr=args.lr,
        warmup_epochs=args.warmup,
        patience=args.max_epochs,
        lr_patience=args.lr_patience,
    )
    for label, device, threads in devices(args.threads):
        torch.set_num_threads(threads)
        seconds, epochs, mae = time_to_mae(sets, device, config, args.target)
        print(
            f"{label}: fit, batch {config.batch_size}, lr {config.for_device(device).lr:.4g}, "
            f"warm-up {config.warmup_epochs}: test MAE {mae:.4f} after {epochs} epochs, "
            f"{seconds:.1f} s to reach {args.target}"
        )


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("epochs", "to-mae"))
    parser.add_argument("data")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch", type=int, nargs="+", default=[64, 512, 2048])
    parser.add_argument("--target", type=float, default=0.0181)
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--lr-patience", type=int, default=3)
    parser.add_argument("--max-epochs", type=int, default=300)
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    args = parse(sys.argv[1:])
    (run_epochs if args.mode == "epochs" else run_to_mae)(args)

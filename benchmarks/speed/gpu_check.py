"""One prepared GPU check (run on a CUDA machine; prints one figure per line).

Training (issue 12), for the Hanoi WAQ folder and, with ``--ltown``, an L-Town one: one epoch
of the old loop (batch 64) and of :func:`wdn_explain.training.fit` at several batch sizes,
on the GPU and on 2 CPU threads of the same machine; the wall time until the test MAE first
reaches the shipped model's (read from its card) on the GPU (auto: batch 2048; and batch
64) and on 2 CPU threads (auto: batch 64), each run capped by ``--time-limit`` seconds, and
the ratio; GPU and CPU training of the same seed compared epoch by epoch. Then, as before,
GPU and CPU predictions of the same weights and one Hanoi step explained exactly on both.
Hanoi alone takes about 8 minutes on an H100 host at the default limit (estimate, not run);
lower ``--time-limit`` when adding L-Town.

Usage:
    python benchmarks/speed/gpu_check.py DATA_DIR OUT_DIR [--ltown DIR --ltown-model DIR]
        [--device cpu] [--max-epochs N] [--time-limit S]

``--device cpu`` is a dry run on a machine without a GPU (the "GPU" column is the CPU with
all threads). Figures also go to ``OUT_DIR/gpu_training.txt`` (copy it to
``benchmarks/results/gpu_training_<card>.txt``). The training part imports torch,
torch_geometric, numpy, scipy, pyyaml, tqdm and pydantic (carry pydantic, pydantic-core,
annotated-types and typing-inspection as wheels where they are missing); no shapiq, no
EPyT-Flow.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from bench_training import new_epochs, old_epoch, splits, time_to_mae

from wdn_explain.dataset import WaqDataset, load_waq_arrays
from wdn_explain.model import ChlorineGNN, ModelConfig
from wdn_explain.model_folder import load_model
from wdn_explain.training import TrainConfig, fit, predict

LINES: list[str] = []


def say(line: str) -> None:
    print(line)
    LINES.append(line)


def card_mae(model_dir: Path) -> float:
    return json.loads((model_dir / "card.json").read_text())["metrics"]["mae"]


def check_training(name: str, data: Path, target: float, gpu: torch.device, args) -> None:
    sets = splits(str(data))
    cpu = torch.device("cpu")
    say(f"{name}: {len(sets['train'])} training graphs of {sets['train']._x.shape[2]} nodes")
    threads = torch.get_num_threads()
    full = len(sets["train"])
    for label, device, n_threads, sizes in (
        (f"{name} GPU", gpu, threads, (64, 512, 2048, 4096, full)),
        (f"{name} CPU 2 threads", cpu, 2, (64, 512)),
    ):
        torch.set_num_threads(n_threads)
        old = old_epoch(sets, device)
        say(f"{label}: old loop, batch 64: {old:.3f} s/epoch")
        for batch_size in sizes:
            new = new_epochs(sets, device, batch_size)
            say(f"{label}: fit, batch {batch_size}: {new:.3f} s/epoch ({old / new:.1f}x the old)")
    times = {}
    for label, device, n_threads, batch_size in (
        ("GPU auto", gpu, threads, None),
        ("GPU batch 64", gpu, threads, 64),
        ("CPU 2 threads auto", cpu, 2, None),
    ):
        torch.set_num_threads(n_threads)
        config = TrainConfig(
            epochs=args.max_epochs, patience=args.max_epochs, batch_size=batch_size
        )
        start = time.perf_counter()
        seconds, epochs, mae = time_to_mae(sets, device, config, target, args.time_limit)
        resolved = config.for_device(device)
        say(
            f"{name} {label}: batch {resolved.batch_size}, lr {resolved.lr:.4g}: test MAE "
            f"{mae:.4f} after {epochs} epochs, {seconds:.1f} s of training to reach {target:.4f} "
            f"(wall {time.perf_counter() - start:.0f} s with test scoring)"
        )
        times[label] = seconds
    ratio = times["CPU 2 threads auto"] / min(times["GPU auto"], times["GPU batch 64"])
    say(
        f"{name}: time to test MAE {target:.4f}, CPU (2 threads) / best GPU: "
        + (f"{ratio:.1f}x" if np.isfinite(ratio) else "not measured (target not reached)")
    )
    torch.set_num_threads(threads)
    config = TrainConfig(epochs=3, batch_size=512, warmup_epochs=1).for_device(cpu)
    runs = []
    for device in (cpu, gpu):
        torch.manual_seed(0)
        model = ChlorineGNN(ModelConfig(in_channels=sets["train"].inputs.in_channels)).to(device)
        runs.append(fit(model, sets["train"].stacked(), sets["val"].stacked(), config, device))
    diff = max(
        abs(a[k] - b[k])
        for a, b in zip(runs[0].history, runs[1].history)
        for k in ("train_mae", "val_mae")
    )
    say(f"{name}: CPU vs GPU training, same seed, 3 epochs: max |MAE diff| {diff:.2e}")


def explain_time(model, data, repeats: int = 3):
    from wdn_explain.explain import GraphSHAPIQ

    explainer = GraphSHAPIQ(model)
    explainer.explain(data)  # warm-up: state graph and kernels
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        e = explainer.explain(data)
    return e, (time.perf_counter() - start) / repeats


def check_model(data_dir: Path, model_dir: Path, gpu: torch.device, report: dict) -> None:
    """GPU vs CPU predictions of the same weights, and one exact explanation on both."""
    model, _ = load_model(model_dir)
    test = WaqDataset(data_dir, "test", arrays=load_waq_arrays(data_dir))
    p_cpu = predict(model, test, "cpu")
    p_gpu = predict(model.to(gpu), test, gpu)
    diff = float(np.abs(p_cpu - p_gpu).max())
    report["prediction_max_abs_diff"] = diff
    say(
        f"GPU vs CPU predictions, same weights, {len(test)} test samples: max |diff| {diff:.2e} ({'OK' if diff <= 1e-4 else 'FAIL'} at 1e-4)"
    )
    data = test[12]
    e_gpu, t_gpu = explain_time(model.to(gpu), data.to(gpu))
    e_cpu, t_cpu = explain_time(model.cpu(), data)
    keys_g, mi_g = e_gpu.blocks.moebius()
    keys_c, mi_c = e_cpu.blocks.moebius()
    assert np.array_equal(keys_g, keys_c)
    mi_diff = float(np.abs(mi_g - mi_c).max())
    report["explain"] = {
        "gpu_seconds": t_gpu,
        "cpu_seconds": t_cpu,
        "n_interactions": e_gpu.n_interactions,
        "mi_max_abs_diff": mi_diff,
    }
    say(
        f"exact explanation of one Hanoi step (|I| = {e_gpu.n_interactions}): GPU {t_gpu:.3f} s, CPU {t_cpu:.3f} s, MI max |diff| {mi_diff:.2e}"
    )


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--model", type=Path, default=Path("models/default"))
    parser.add_argument("--ltown", type=Path)
    parser.add_argument("--ltown-model", type=Path, default=Path("models/l-town"))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--max-epochs", type=int, default=400)
    parser.add_argument("--time-limit", type=float, default=150.0, help="s per run to the MAE")
    parser.add_argument("--skip-explain", action="store_true")
    args = parser.parse_args()
    gpu = torch.device(args.device)
    name = torch.cuda.get_device_name(gpu) if gpu.type == "cuda" else "CPU (dry run)"
    say(f"device: {name}, torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    report: dict = {"device": name, "torch": torch.__version__}
    check_training("Hanoi", args.data, card_mae(args.model), gpu, args)
    if args.ltown:
        check_training("L-Town", args.ltown, card_mae(args.ltown_model), gpu, args)
    if not args.skip_explain:
        check_model(args.data, args.model, gpu, report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_training.txt").write_text("\n".join(LINES) + "\n")
    (args.out / "gpu_report.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

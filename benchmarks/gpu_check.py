"""One prepared GPU check (run on a CUDA machine; prints one figure per line).

Trains the default model config on the GPU (WAQ folder given as argument), times an epoch
on the GPU and on the CPU of the same machine, checks that GPU and CPU predictions of the
same weights agree to 1e-4, and explains one Hanoi time step exactly on GPU and CPU.

Usage: python benchmarks/gpu_check.py DATA_DIR OUT_DIR [EPOCHS]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from wdn_explain.dataset import WaqDataset, load_waq_arrays
from wdn_explain.explain import GraphSHAPIQ
from wdn_explain.training import TrainConfig, load_model, predict, train


def explain_time(model, data, repeats: int = 3):
    explainer = GraphSHAPIQ(model)
    explainer.explain(data)  # warm-up: state graph and kernels
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        e = explainer.explain(data)
    return e, (time.perf_counter() - start) / repeats


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    data_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
    epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    assert torch.cuda.is_available(), "no CUDA device"
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    report = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
    gpu = train(data_dir, out / "model_gpu", train_config=TrainConfig(epochs=epochs), device="cuda")
    report["gpu"] = {k: gpu[k] for k in ("epoch_seconds", "metrics")} | {
        "epochs": len(gpu["history"])
    }
    print(
        f"GPU training: {len(gpu['history'])} epochs, {gpu['epoch_seconds']:.2f} s/epoch, test MAE {gpu['metrics']['mae']:.4f} (persistence {gpu['metrics']['persistence_mae']:.4f})"
    )
    for threads in (2, torch.get_num_threads()):
        torch.set_num_threads(threads)
        cpu = train(
            data_dir, out / f"model_cpu{threads}", train_config=TrainConfig(epochs=1), device="cpu"
        )
        report[f"cpu_{threads}_threads_epoch_seconds"] = cpu["epoch_seconds"]
        print(
            f"CPU ({threads} threads) epoch on the same machine: {cpu['epoch_seconds']:.2f} s; GPU speed-up {cpu['epoch_seconds'] / gpu['epoch_seconds']:.1f}x"
        )
    model, card = load_model(out / "model_gpu")
    arrays = load_waq_arrays(data_dir)
    test = WaqDataset(data_dir, "test", arrays=arrays)
    p_cpu = predict(model, test, "cpu")
    p_gpu = predict(model.cuda(), test, "cuda")
    diff = float(np.abs(p_cpu - p_gpu).max())
    report["prediction_max_abs_diff"] = diff
    print(
        f"GPU vs CPU predictions, same weights, {len(test)} test samples: max |diff| {diff:.2e} ({'OK' if diff <= 1e-4 else 'FAIL'} at 1e-4)"
    )
    data = test[12]
    e_gpu, t_gpu = explain_time(model.cuda(), data.cuda())
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
    print(
        f"exact explanation of one Hanoi step (|I| = {e_gpu.n_interactions}): GPU {t_gpu:.3f} s, CPU {t_cpu:.3f} s, MI max |diff| {mi_diff:.2e}"
    )
    (out / "gpu_report.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

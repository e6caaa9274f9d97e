"""Issue 31's notice goals measured on fresh scenarios: how often the uncertainty notice
(:mod:`wdn_explain.notice`) fires on the worst 5 % and on the best half of a model's
scenarios (by its MAE per scenario), with the strong tree's MAE beside the model's.

The notice is designed on ``--design`` (held-out scenarios the model never trained on: its
own card's record when ``--design`` is left out) and measured on ``--data``, a folder of
fresh scenarios of an unseen seed (or ``--splits`` of it: the model's own data folder's
held-out ``val calib test``). With ``--timeline`` (a share model's timeline file, e.g. the
app's default), whether the notice is honest there: that scenario's MAE (the served
forecast against the simulated share) and its rank among the measured scenarios. One
figure a line.

    OMP_NUM_THREADS=1 python benchmarks/quality/notice_goals.py --model models/default \\
        --data /work/data/monitoring-fresh [--design other-fresh-folder]
    OMP_NUM_THREADS=1 python benchmarks/quality/notice_goals.py --model models/default \\
        --data data/monitoring --splits val calib test --timeline models/default/default_timeline.npz
"""

from __future__ import annotations

import argparse

import numpy as np

from wdn_explain.dataset import WaqDataset, load_waq_arrays
from wdn_explain.model_folder import load_model
from wdn_explain.notice import design_notice, expected_maes, held_out_errors
from wdn_explain.timeline import Timeline
from wdn_explain.training import predict


def errors(model, card, folder, splits=("all",)):
    arrays = load_waq_arrays(folder)
    parts = [WaqDataset.for_card(card, folder, split, arrays) for split in splits]
    found = [held_out_errors(ds, predict(model, ds)) for ds in parts]
    return [f for features, _ in found for f in features], np.concatenate([m for _, m in found])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True, help="fresh scenarios (measured)")
    parser.add_argument("--design", help="held-out scenarios the notice is designed on")
    parser.add_argument("--splits", nargs="+", default=["all"], help="splits of --data")
    parser.add_argument("--timeline", help="a share model's timeline: its MAE and rank")
    args = parser.parse_args()
    model, card = load_model(args.model)
    record = card.notice
    if args.design:
        record = design_notice(*errors(model, card, args.design))
    if record is None:
        raise SystemExit(f"{args.model}: its card has no notice record; pass --design")
    features, mae = errors(model, card, args.data, args.splits)
    fires = expected_maes(record, features) >= record["threshold_mae"]
    worst, best = mae >= np.quantile(mae, 0.95), mae <= np.median(mae)
    print(f"scenarios: {len(mae)}; design: {record['n_scenarios']} scenarios")
    print(f"threshold (expected MAE): {record['threshold_mae']:.4g}")
    print(f"design fires on worst 5 %: {record['fires_on_worst']:.3f}")
    print(f"design fires on best half: {record['fires_on_best_half']:.3f}")
    print(f"fresh fires on worst 5 %: {fires[worst].mean():.3f} ({worst.sum()} scenarios)")
    print(f"fresh fires on best half: {fires[best].mean():.3f} ({best.sum()} scenarios)")
    print(f"fresh fires overall: {fires.mean():.3f}")
    corr = np.corrcoef(np.log(expected_maes(record, features)), np.log(mae))[0, 1]
    print(f"correlation of log expected and log actual scenario MAE: {corr:.3f}")
    if args.timeline:
        tl = Timeline.load(args.timeline)
        own = float(np.abs(tl.forecast - tl.truth).mean())
        print(
            f"{tl.scenario.describe()}: notice {'fires' if tl.meta.get('uncertainty') else 'silent'}"
        )
        print(f"  its MAE {own:.4f}, {own / np.median(mae):.2f}x the median {np.median(mae):.4f}")
        print(f"  scenarios with a larger MAE: {(mae > own).mean():.3f} of {len(mae)}")
        print(
            f"  median MAE where the notice fires: {np.median(mae[fires]):.4f}, "
            f"elsewhere {np.median(mae[~fires]):.4f}"
        )


if __name__ == "__main__":
    main()

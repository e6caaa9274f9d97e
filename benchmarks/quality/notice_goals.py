"""Issue 31's notice goals measured on fresh scenarios: how often the uncertainty notice
(:mod:`wdn_explain.notice`) fires on the worst 5 % and on the best half of a model's
scenarios (by its MAE per scenario), with the strong tree's MAE beside the model's.

The notice is designed on ``--design`` (held-out scenarios the model never trained on: its
own card's record when ``--design`` is left out) and measured on ``--data``, a folder of
fresh scenarios of an unseen seed. One figure a line.

    OMP_NUM_THREADS=1 python benchmarks/quality/notice_goals.py --model models/default \\
        --data /work/data/monitoring-fresh [--design other-fresh-folder]
"""

from __future__ import annotations

import argparse

import numpy as np

from wdn_explain.dataset import WaqDataset
from wdn_explain.model_folder import load_model
from wdn_explain.notice import design_notice, expected_maes, held_out_errors
from wdn_explain.training import predict


def errors(model, card, folder):
    ds = WaqDataset.for_card(card, folder, "all")
    return held_out_errors(ds, predict(model, ds))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True, help="fresh scenarios (measured)")
    parser.add_argument("--design", help="held-out scenarios the notice is designed on")
    args = parser.parse_args()
    model, card = load_model(args.model)
    record = card.notice
    if args.design:
        record = design_notice(*errors(model, card, args.design))
    if record is None:
        raise SystemExit(f"{args.model}: its card has no notice record; pass --design")
    features, mae = errors(model, card, args.data)
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


if __name__ == "__main__":
    main()

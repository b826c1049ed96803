"""Train a small classifier, quantize it to int8, and record both models' answers for `paradise compare`.

    python examples/quantize_eval.py --out runs/quant
    paradise compare runs/quant/base runs/quant/int8 --baseline-repeat runs/quant/base_repeat

Data: a synthetic multiple-choice-style task (Gaussian clusters, 4 classes, some overlap so
that a share of items sit near the decision boundary, where quantization flips answers).
Quantization: PyTorch's own dynamic int8 quantization of the Linear layers. `base_repeat`
is the same recipe trained with another seed: the noise floor for flips and KL.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from tracers.outputs import OutputsWriter

CENTER_SCALE = 0.25
"""Cluster spread chosen so about a quarter of items are hard: accuracy ~75-80%, many small margins."""


def make_data(n: int, dim: int, classes: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=CENTER_SCALE, size=(classes, dim))
    y = rng.integers(0, classes, n)
    x = centers[y] + rng.normal(size=(n, dim))
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.int64)


def train(x: torch.Tensor, y: torch.Tensor, classes: int, seed: int, epochs: int) -> nn.Module:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(x.shape[1], 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, classes))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        perm = torch.randperm(len(x), generator=g)
        for i in range(0, len(x), 256):
            idx = perm[i : i + 256]
            opt.zero_grad()
            nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    return model.eval()


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, out: Path, force: bool) -> float:
    with torch.no_grad():
        logprobs = torch.log_softmax(model(x), dim=-1)
    with OutputsWriter(out, force=force) as w:
        w.add([f"q{i:06d}" for i in range(len(x))], y, logprobs=logprobs)
    return float((logprobs.argmax(-1) == y).float().mean())


def quantize(model: nn.Module) -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao dynamic quantization warns that it moves to torchao
        return torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for base/, int8/ and base_repeat/")
    ap.add_argument("--items", type=int, default=20_000, help="evaluation items")
    ap.add_argument("--train-items", type=int, default=20_000)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="overwrite existing outputs")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    x_train, y_train = make_data(args.train_items, args.dim, args.classes, args.seed)
    # evaluation items: the same clusters, samples after the training ones
    x_eval, y_eval = make_data(args.train_items + args.items, args.dim, args.classes, args.seed)
    x_eval, y_eval = x_eval[args.train_items :], y_eval[args.train_items :]
    base = train(x_train, y_train, args.classes, args.seed, args.epochs)
    acc = {
        "base": evaluate(base, x_eval, y_eval, args.out / "base", args.force),
        "int8": evaluate(quantize(base), x_eval, y_eval, args.out / "int8", args.force),
        "base_repeat": evaluate(
            train(x_train, y_train, args.classes, args.seed + 1, args.epochs), x_eval, y_eval, args.out / "base_repeat", args.force
        ),
    }
    print(" ".join(f"accuracy_{k}={v:.4f}" for k, v in acc.items()))
    print(f"wrote {args.out}/base, {args.out}/int8, {args.out}/base_repeat")
    return 0


if __name__ == "__main__":
    sys.exit(main())

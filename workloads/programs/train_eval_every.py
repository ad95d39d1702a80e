"""Train a classifier and evaluate it every N steps, the metrics computed with numpy.

Training batches are made on the GPU. Every ``--eval-every`` steps the model is evaluated on a
validation set held on the host as numpy arrays: each batch is moved to the GPU, the
probabilities come back with ``.cpu().numpy()``, and the metrics (accuracy, per-class precision
and recall, a ranking AUC per class) are computed in numpy on the host, as evaluation code
usually is.

    python3 train_eval_every.py --duration 18 --eval-every 600 --val-batches 32
"""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _truth import Truth


def build_model(features, width, classes):
    return nn.Sequential(nn.Linear(features, width), nn.GELU(), nn.Linear(width, width),
                         nn.GELU(), nn.Linear(width, width), nn.GELU(), nn.Linear(width, classes))


def auc_per_class(probs, labels, classes):
    """Area under the ROC curve of each class, one against the rest (rank statistic)."""
    out = []
    for c in range(classes):
        scores = probs[:, c]
        positive = labels == c
        n_pos, n_neg = positive.sum(), (~positive).sum()
        if n_pos == 0 or n_neg == 0:
            continue
        ranks = np.argsort(np.argsort(scores)) + 1
        out.append((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
    return float(np.mean(out))


def evaluate(model, val_x, val_y, batch, device, classes):
    model.eval()
    all_probs = []
    with torch.no_grad():
        for i in range(0, len(val_x), batch):
            x = torch.from_numpy(val_x[i:i + batch]).to(device)
            probs = F.softmax(model(x).float(), dim=-1)
            all_probs.append(probs.cpu().numpy())
    model.train()
    probs = np.concatenate(all_probs)
    pred = probs.argmax(axis=1)
    precision = [np.mean(val_y[pred == c] == c) if np.any(pred == c) else 0.0
                 for c in range(classes)]
    recall = [np.mean(pred[val_y == c] == c) if np.any(val_y == c) else 0.0
              for c in range(classes)]
    return {"accuracy": float(np.mean(pred == val_y)), "precision": float(np.mean(precision)),
            "recall": float(np.mean(recall)), "auc": auc_per_class(probs, val_y, classes)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=18.0, help="seconds to train")
    parser.add_argument("--eval-every", type=int, default=600, help="steps between evaluations")
    parser.add_argument("--val-batches", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--features", type=int, default=1024)
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.features, args.width, args.batch_size = min(args.duration, 2.0), 16, 32, 64
        args.eval_every, args.val_batches, args.classes = 20, 4, 10
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    val_x = rng.standard_normal((args.val_batches * args.batch_size, args.features),
                                dtype=np.float32)
    val_y = rng.integers(0, args.classes, len(val_x))
    model = build_model(args.features, args.width, args.classes).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    truth = Truth("train_eval_every", vars(args), device)
    step = evals = 0
    start = time.time()
    truth.start()
    while time.time() - start < args.duration:
        truth.begin("gpu")
        x = torch.randn(args.batch_size, args.features, device=device)
        y = torch.randint(0, args.classes, (args.batch_size,), device=device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = F.cross_entropy(model(x).float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        truth.end("gpu")
        step += 1
        truth.step()
        if step % 50 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        if step % args.eval_every == 0:
            with truth.host("eval"):
                metrics = evaluate(model, val_x, val_y, args.batch_size, device, args.classes)
            evals += 1
            print(f"eval at step {step}: " + " ".join(f"{k} {v:.4f}" for k, v in metrics.items()),
                  flush=True)
    truth.stop(evaluations=evals)
    print(f"done: {step} steps, {evals} evaluations in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()

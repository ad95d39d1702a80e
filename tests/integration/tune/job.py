#!/usr/bin/env python3
"""A job for gpudoc tune's tests, written as a user would time a loop: each step does its work
(a sleep standing in for it) and the job prints ``::gpudoc {"step_ms": ..., "loss": ...}`` with the
step's measured time. Its speed depends on its environment, as a real job's does:

  --step-ms MS        a step's time (default 20)
  --fast VAR=VALUE    steps take --fast-ms instead when the variable has that value (OMP_NUM_THREADS=1)
  --fast-ms MS        (default half of --step-ms)
  --loader            builds a torch DataLoader (the fake one of tests/integration/tune/fake_torch, or
                      torch's) and takes --fast-ms when it has workers (the shim's `workers` patch)
  --fail VAR=VALUE    exits 1 at once when the variable has that value (a change that breaks the job)
  --oom VAR=VALUE     prints CUDA's out-of-memory error and exits 1 when the variable has that value
  --hang VAR=VALUE    sleeps for ever when the variable has that value (a trial that must time out)
  --steps N           then it ends by itself (default 100000)
  --silent            prints no figure (gpudoc then times whole runs); with --steps, ends after them
  --loss-shift X      adds X to the loss when TF32 is on (torch.backends.cuda.matmul.allow_tf32)
"""
import argparse
import os
import sys
import time


def matches(spec):
    if not spec:
        return False
    name, _, value = spec.partition("=")
    return os.environ.get(name) == value


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--step-ms", type=float, default=20.0)
    p.add_argument("--fast", default="")
    p.add_argument("--fast-ms", type=float, default=None)
    p.add_argument("--loader", action="store_true")
    p.add_argument("--fail", default="")
    p.add_argument("--oom", default="")
    p.add_argument("--hang", default="")
    p.add_argument("--steps", type=int, default=100000)
    p.add_argument("--silent", action="store_true")
    p.add_argument("--loss-shift", type=float, default=0.0)
    a = p.parse_args()
    if matches(a.fail):
        print("job: failing on purpose", file=sys.stderr)
        sys.exit(1)
    if matches(a.oom):
        print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", file=sys.stderr)
        sys.exit(1)
    if matches(a.hang):
        while True:
            time.sleep(1)
    fast_ms = a.fast_ms if a.fast_ms is not None else a.step_ms / 2
    step_ms = fast_ms if matches(a.fast) else a.step_ms
    shift = 0.0
    if a.loader or a.loss_shift:
        import torch
        if a.loader:
            loader = torch.utils.data.DataLoader(list(range(64)), batch_size=8)
            if loader.num_workers > 0:
                step_ms = fast_ms
        if a.loss_shift and torch.backends.cuda.matmul.allow_tf32:
            shift = a.loss_shift
    for i in range(a.steps):
        t0 = time.perf_counter()
        time.sleep(step_ms / 1000.0)
        took = (time.perf_counter() - t0) * 1000.0
        if not a.silent:
            print('::gpudoc {"step": %d, "step_ms": %.3f, "loss": %.4f}' % (i + 1, took, 2.0 / (1 + i) + shift),
                  flush=True)


if __name__ == "__main__":
    main()

"""An inference service whose clients send their requests in bursts.

A client thread sends a burst of requests every ``--period-s`` seconds (a batch job upstream
flushing its queue); the server takes up to ``--max-batch`` requests at a time from the queue,
runs a 12-layer transformer encoder on them under ``torch.inference_mode`` and sends the answers
back (``.cpu()``). A burst holds as many requests as the server answers in about ``--burst-s``
seconds (measured once at start-up, as a load test would size it); between bursts the server
waits on an empty queue.

    python3 bursty_service.py --duration 16 --period-s 2 --burst-s 0.5
"""
import argparse
import os
import queue
import threading
import time

import torch
import torch.nn as nn

from _truth import Truth


class Classifier(nn.Module):
    def __init__(self, vocab, width, layers, heads, classes):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, batch_first=True,
                                           dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))


def client(requests, stop, period_s, burst_requests, seq, vocab):
    """Sends ``burst_requests`` requests at the start of every period."""
    g = torch.Generator().manual_seed(1)
    next_t = time.time()
    while not stop.is_set():
        for _ in range(burst_requests):
            requests.put(torch.randint(0, vocab, (seq,), generator=g))
        next_t += period_s
        stop.wait(max(0.0, next_t - time.time()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=16.0, help="seconds to serve")
    parser.add_argument("--period-s", type=float, default=2.0, help="seconds between bursts")
    parser.add_argument("--burst-s", type=float, default=0.5, help="server time per burst")
    parser.add_argument("--max-batch", type=int, default=64)
    parser.add_argument("--seq", type=int, default=128, help="tokens per request")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.width, args.layers, args.seq = min(args.duration, 2.0), 32, 2, 16
        args.period_s, args.burst_s, args.max_batch = 0.5, 0.1, 8
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model = Classifier(args.vocab, args.width, args.layers, 16 if args.width >= 256 else 4,
                       10).to(device, dtype).eval()

    # size the bursts: time a few full batches
    probe = torch.randint(0, args.vocab, (args.max_batch, args.seq))
    with torch.inference_mode():
        for _ in range(3):
            model(probe.to(device)).argmax(-1).cpu()
        t = time.time()
        for _ in range(5):
            model(probe.to(device)).argmax(-1).cpu()
        batch_s = (time.time() - t) / 5
    burst_requests = max(1, int(args.burst_s / batch_s)) * args.max_batch
    print(f"a full batch takes {batch_s * 1e3:.1f} ms: {burst_requests} requests per burst",
          flush=True)

    truth = Truth("bursty_service", vars(args), device)
    truth.value("batch_ms_at_start", batch_s * 1e3)
    truth.value("requests_per_burst", burst_requests)

    requests = queue.Queue()
    stop = threading.Event()
    sender = threading.Thread(target=client, daemon=True,
                              args=(requests, stop, args.period_s, burst_requests, args.seq,
                                    args.vocab))
    served = batches = 0
    start = last = time.time()
    truth.start()
    sender.start()
    while time.time() - start < args.duration:
        try:
            batch = [requests.get(timeout=0.1)]
        except queue.Empty:
            continue
        while len(batch) < args.max_batch:
            try:
                batch.append(requests.get_nowait())
            except queue.Empty:
                break
        tokens = torch.stack(batch)
        truth.begin("gpu")
        with torch.inference_mode():
            labels = model(tokens.to(device)).argmax(-1)
        truth.end("gpu")
        answers = labels.cpu()
        served += len(answers)
        batches += 1
        truth.step()
        now = time.time()
        if now - last >= 1.0:
            print(f"served {served} requests in {batches} batches, queue {requests.qsize()}",
                  flush=True)
            last = now
    stop.set()
    sender.join()
    truth.stop(requests=served, batches=batches)
    print(f"done: {served} requests in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()

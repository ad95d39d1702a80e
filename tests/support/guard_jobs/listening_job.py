"""A job for the guard's session tests: connects with python/gpudoc's Guard, acts on every advice
(acks it with what a training loop would say) and exits 0 when told to stop. Prints one line per
advice received: "advice ACTION LEVEL". With --exit-after S it exits with code 3 after S seconds
instead (a job that dies); with --never-stop it ignores stop advice (acks "refused")."""
import argparse
import sys
import time

from gpudoc import Guard

parser = argparse.ArgumentParser()
parser.add_argument("--exit-after", type=float, default=None)
parser.add_argument("--never-stop", action="store_true")
parser.add_argument("--max-s", type=float, default=30.0)
args = parser.parse_args()

batch = 64
start = time.monotonic()
with Guard(name="listening_job", gpus=[0]) as guard:
    while time.monotonic() - start < args.max_s:
        if args.exit_after is not None and time.monotonic() - start > args.exit_after:
            sys.exit(3)
        for a in guard.poll():
            print(f"advice {a.action} {a.level}", flush=True)
            if a.action == "shrink_batch":
                batch = max(1, int(batch * a.factor))
                guard.ack(a, batch_size=batch, accumulation_steps=64 // batch)
            elif a.action == "checkpoint_now":
                guard.ack(a, checkpoint_path="/dev/null")
            elif a.action == "stop":
                if args.never_stop:
                    guard.ack(a, status="refused")
                else:
                    guard.ack(a)
                    guard.close("done")
                    sys.exit(0)
            else:
                guard.ack(a)
        guard.report(step=int((time.monotonic() - start) * 100), samples_per_s=1000.0)
        time.sleep(0.01)
sys.exit(4)  # never told to stop

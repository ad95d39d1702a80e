"""A job for the guard's session tests that never connects: SIGTERM makes it print "stopped" and
exit 0; it exits 5 after --max-s seconds otherwise."""
import signal
import sys
import time

def on_term(signum, frame):
    print("stopped", flush=True)
    sys.exit(0)

signal.signal(signal.SIGTERM, on_term)
deadline = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 30)
while time.monotonic() < deadline:
    time.sleep(0.01)
sys.exit(5)

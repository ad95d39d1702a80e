"""A job for the guard's session tests that never connects: SIGTERM makes it print "stopped" and
exit 0; it exits 5 after MAX_S seconds otherwise. With READY_FILE it writes that file once its
handler is installed (a slow Python start-up then delays the test's script, not the handler).

    signal_job.py [MAX_S] [READY_FILE]"""
import signal
import sys
import time

def on_term(signum, frame):
    print("stopped", flush=True)
    sys.exit(0)

signal.signal(signal.SIGTERM, on_term)
if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as ready:
        ready.write("ready\n")
deadline = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 30)
while time.monotonic() < deadline:
    time.sleep(0.01)
sys.exit(5)

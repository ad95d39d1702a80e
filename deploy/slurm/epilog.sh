#!/bin/bash
# Slurm Epilog: gates this node on `gpudoc health --gate` after each job, as prolog.sh does before
# it (prolog.sh, beside this file, says how). A failing gate drains the node with the reason; the
# epilog itself exits 0 then, since the job has ended and the drain is already recorded.
#   slurm.conf:  Epilog=/etc/slurm/epilog.sh
set -u
exec "$(dirname "$(readlink -f "$0")")/prolog.sh" --phase epilog

#!/usr/bin/env bash
# Session 7, device run 5 (the last ~4 device minutes): does host memory traffic move pinned PCIe?
# pcie pinned h2d / d2h / bidir (--quick, 10 samples each) alone, then while 8 host threads copy
# 1 GiB buffers (PyTorch CPU tensors) for 25 s, then alone again. Results in $OUT/s7r5.tgz.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
R=$OUT/s7r5; mkdir -p $R
G=.device/bin/gpudoc; K=pcie.h2d.pinned,pcie.d2h.pinned,pcie.bidir.pinned
$G bench --quick --json --only $K > $R/alone_before.json 2>/dev/null
python3 -c "
import time, torch
torch.set_num_threads(8); a = torch.empty(2**28); b = torch.ones(2**28); n = 0; t0 = time.time()
while time.time() - t0 < 25: a.copy_(b); n += 1
print('host copy: %.1f GB/s (read + write) over %.1f s' % (n * 2 * 4 * 2**28 / (time.time() - t0) / 1e9, time.time() - t0))
" > $R/hog.txt 2>&1 &
sleep 3
$G bench --quick --json --only $K > $R/with_host_copy.json 2>/dev/null
wait; cat $R/hog.txt
$G bench --quick --json --only $K > $R/alone_after.json 2>/dev/null
python3 -c "
import json
for n in ('alone_before', 'with_host_copy', 'alone_after'):
  for r in json.load(open('$R/%s.json' % n))['results']:
    x = r['result']; print('%-15s %-18s median %6.1f GB/s  min %6.1f  max %6.1f  CV %.2f %%' % (n, r['key'], x['median'], x['min'], x['max'], 100 * x['cv']))
" | tee $R/summary.txt
cd $OUT && tar czf s7r5.tgz s7r5 && rm -rf s7r5

set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export GPUDOC_COMMIT=b244af3+wt
R=$OUT/r1; mkdir -p $R
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm,power.draw --format=csv > $R/env.txt 2>&1
echo "== nvml_read_cost idle" ; .device/bin/nvml_read_cost 30 0 > $R/nvml_cost_idle.json 2>&1; cat $R/nvml_cost_idle.json
echo "== hbm variants"; .device/bin/hbm_variants 3 > $R/hbm_variants.jsonl 2>&1; tail -3 $R/hbm_variants.jsonl
python3 scripts/device/torch_bench.py --only hbm.copy > $R/torch_copy.json 2>$R/torch_copy.err; python3 -c "import json;d=json.load(open('$R/torch_copy.json'));print(d)" | head -c 600; echo
( sleep 3; .device/bin/nvml_read_cost 30 0 > $R/nvml_cost_load.json 2>&1 ) &
timeout 420 python3 scripts/device/bench_compare.py $R/cmp > $R/compare.log 2>&1; echo "compare rc=$?"
wait
cat $R/nvml_cost_load.json
cat $R/cmp/compare.md | head -40
cd $OUT && tar czf r1.tgz r1 && rm -rf r1

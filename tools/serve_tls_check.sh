#!/usr/bin/env bash
# gpudoc serve over TLS with basic authentication on a GPU node (docs/serve.md, "TLS and
# authentication"): a CA and a certificate for 127.0.0.1 made with openssl, a web config with one
# user, then scrapes of /metrics over https — with the password and the CA (each timed), without
# the password (401 expected), against the system's CAs only (refused expected) — and the structured
# log serve wrote (--log-format json). Live GPUs unless GPUDOC_BACKEND says otherwise.
#
# Usage: tools/serve_tls_check.sh OUTDIR GPUDOC
# Needs openssl and python3. Never changes a GPU setting.
set -uo pipefail
if [[ $# -ne 2 ]]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
out=$1
gpudoc=$(realpath "$2")
mkdir -p "$out"
out=$(realpath "$out")
cd "$out" || exit 3
ossl() { openssl "$@" > /dev/null 2>&1 || { echo "serve_tls_check: openssl $1 failed" >&2; exit 3; }; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=gpudoc check CA" \
  -keyout ca.key -out ca.crt
ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 -keyout tls.key -out tls.csr
echo "subjectAltName=IP:127.0.0.1" > san.ext
ossl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext -out tls.crt
# bcrypt (cost 10) of the password "s3cret", made with libxcrypt: crypt("s3cret", "$2b$10$...")
cat > web.yml <<'YML'
tls_server_config: {cert_file: tls.crt, key_file: tls.key}
basic_auth_users:
  prometheus: '$2b$10$tzDn5d1/ZfmTbj3o3SXJc.Rwr5meojq/TNxrx.SyOO/cGu20EZmKe'
YML
chmod 600 web.yml tls.key ca.key
port=19491
"$gpudoc" serve --listen "127.0.0.1:$port" --no-store --web-config-file web.yml --log-format json \
  --duration 40 2> serve.log &
serve_pid=$!
python3 - "$port" "$out" <<'PY' | tee summary.txt
import base64, ssl, sys, time, urllib.error, urllib.request
port, out = sys.argv[1], sys.argv[2]
url = f"https://127.0.0.1:{port}/metrics"
ca = ssl.create_default_context(cafile=f"{out}/ca.crt")
auth = {"Authorization": "Basic " + base64.b64encode(b"prometheus:s3cret").decode()}
def get(headers, context):
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10, context=context)
for _ in range(60):  # until it listens
    try:
        get(auth, ca).read()
        break
    except Exception:
        time.sleep(0.5)
times, body = [], ""
for _ in range(20):
    t0 = time.perf_counter()
    with get(auth, ca) as r:
        body = r.read().decode()
    times.append((time.perf_counter() - t0) * 1000)
times.sort()
print(f"20 scrapes over https with basic auth: median {times[10]:.1f} ms, max {times[-1]:.1f} ms, "
      f"{len(body.splitlines())} lines")
for name in ("gpudoc_power_watts", "gpudoc_gpu_info", "process_cpu_seconds_total", "process_resident_memory_bytes",
             "process_open_fds", "gpudoc_build_info"):
    print(f"  {'present' if any(l.startswith(name) for l in body.splitlines()) else 'ABSENT '}  {name}")
try:
    get({}, ca)
    print("without the password: answered (WRONG)")
except urllib.error.HTTPError as e:
    print(f"without the password: {e.code} {e.headers.get('WWW-Authenticate')}")
try:
    get(auth, ssl.create_default_context())
    print("with the system's CAs only: answered (WRONG)")
except Exception as e:
    print(f"with the system's CAs only: refused ({type(e).__name__}: {str(e)[:90]})")
PY
kill -TERM "$serve_pid" 2> /dev/null
wait "$serve_pid"
echo "serve: exit $?; its log (--log-format json), first lines:" | tee -a summary.txt
head -4 serve.log | tee -a summary.txt

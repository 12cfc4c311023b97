"""Times a filtered list that matches nothing against an unfiltered one on a
node holding N collections (issue 16.14). Usage: filtered_list.py BINARY N"""
import json, os, subprocess, sys, tempfile, time, urllib.request, concurrent.futures, socket

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

binary, n = sys.argv[1], int(sys.argv[2])
tmp = tempfile.mkdtemp()
ports = [free_port() for _ in range(3)]
env = {k: v for k, v in os.environ.items() if not k.startswith("SIKA_")}
env.update(SIKA_DATA_DIR=f"{tmp}/data", SIKA_LIVE_ADDR=f"127.0.0.1:{ports[0]}",
           SIKA_SANDBOX_ADDR=f"127.0.0.1:{ports[1]}", SIKA_ADMIN_ADDR=f"127.0.0.1:{ports[2]}",
           SIKA_RATE_LIMIT="1000000")
creds = json.loads(subprocess.run([binary, "init", "--json"], env=env, capture_output=True, check=True).stdout)
key = creds["sandboxKey"]
node = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
base = f"http://127.0.0.1:{ports[1]}"
for _ in range(200):
    try:
        urllib.request.urlopen(base + "/healthz"); break
    except Exception:
        time.sleep(0.05)

def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())

def create(i):
    call("POST", "/v1/collections", {"amount": "10.00", "currency": "GHS", "code": "mtn_gh",
                                     "accountNumber": "+233241234567", "externalReference": f"c-{i}"})

with concurrent.futures.ThreadPoolExecutor(16) as pool:
    list(pool.map(create, range(n)))

def timed(path, tries=5):
    best = []
    for _ in range(tries):
        t = time.perf_counter(); page = call("GET", path); best.append(time.perf_counter() - t)
    best.sort()
    return best[len(best) // 2], page

unf, _ = timed("/v1/collections?limit=20")
fil, page = timed("/v1/collections?externalReference=nothing-like-it")
print(f"{binary}: {n} collections; unfiltered {unf*1000:.1f} ms; filtered, no match {fil*1000:.1f} ms "
      f"(data {len(page['data'])}, hasMore {page['hasMore']})")
node.terminate(); node.wait()

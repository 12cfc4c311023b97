"""Times the reads of one payment link that took N failed attempts and one
partial payment (issue 16.4): the payer's hosted page (GET /pay/{link}), the
merchant's single read (GET /v1/payment-links/{id}, which lists every
attempt) and the merchant's list (GET /v1/payment-links). Prints the median
of 15 reads of each. Usage: link_reads.py BINARY N"""
import json, os, subprocess, sys, tempfile, time, urllib.request, concurrent.futures, socket

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

binary, n = sys.argv[1], int(sys.argv[2])
tmp = tempfile.mkdtemp()
ports = [free_port() for _ in range(3)]
env = {k: v for k, v in os.environ.items() if not k.startswith("SIKA_")}
env.update(SIKA_DATA_DIR=f"{tmp}/data", SIKA_LIVE_ADDR=f"127.0.0.1:{ports[0]}",
           SIKA_SANDBOX_ADDR=f"127.0.0.1:{ports[1]}", SIKA_ADMIN_ADDR=f"127.0.0.1:{ports[2]}",
           SIKA_RATE_LIMIT="1000000", SIKA_TIME_SCALE="0.001",
           SIKA_CHECKOUT_ATTEMPTS_PER_LINK=str(n + 1), SIKA_CHECKOUT_ATTEMPTS_PER_ADDRESS=str(n + 1))
creds = json.loads(subprocess.run([binary, "init", "--json"], env=env, capture_output=True, check=True).stdout)
key = creds["sandboxKey"]
node = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
base = f"http://127.0.0.1:{ports[1]}"
for _ in range(200):
    try:
        urllib.request.urlopen(base + "/healthz"); break
    except Exception:
        time.sleep(0.05)

def call(method, path, body=None, auth=True):
    headers = {"Content-Type": "application/json"}
    if auth:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers=headers)
    with urllib.request.urlopen(req) as r:
        raw = r.read()
        return json.loads(raw) if r.headers.get_content_type() == "application/json" else raw

link = call("POST", "/v1/payment-links", {"currency": "GHS", "amount": "100.00", "title": "Probe",
                                          "allowedMethods": ["mobile_money"]})["paymentLink"]["id"]

def attempt(amount):
    # Cents 51: the sandbox declines the charge.
    call("POST", f"/pay/{link}/sessions", {"amount": amount, "method": "mobile_money", "network": "mtn_gh",
                                           "phone": "+233241234567"}, auth=False)

with concurrent.futures.ThreadPoolExecutor(16) as pool:
    list(pool.map(attempt, ["2.51"] * n))
attempt("40.00")
for _ in range(600):
    sessions = call("GET", f"/v1/payment-links/{link}")["paymentLink"]["sessions"]
    if all(s["status"] != "pending" for s in sessions):
        break
    time.sleep(0.1)

def timed(path, auth=True, tries=15):
    times = []
    for _ in range(tries):
        t = time.perf_counter(); answer = call("GET", path, auth=auth); times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2] * 1000, answer

page_ms, page = timed(f"/pay/{link}", auth=False)
single_ms, single = timed(f"/v1/payment-links/{link}")
list_ms, listed = timed("/v1/payment-links?limit=20")
single = single["paymentLink"]
assert b"remaining 60.00 GHS" in page, "the page shows the totals"
assert (single["totalReceived"], listed["data"][0]["totalReceived"]) == ("40.00", "40.00")
print(f"{binary}: {n} failed attempts and one payment on a link; GET /pay/{{link}} {page_ms:.1f} ms; "
      f"GET /v1/payment-links/{{id}} {single_ms:.1f} ms ({len(single['sessions'])} sessions); "
      f"GET /v1/payment-links {list_ms:.1f} ms")
node.terminate(); node.wait()

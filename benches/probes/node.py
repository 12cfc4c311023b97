"""What the probes share: a throwaway node of BINARY on free loopback ports
in a fresh data directory, its sandbox key, a JSON client, and the median
of a few timed reads."""
import json, os, socket, subprocess, tempfile, time, urllib.request


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


class Node:
    """`sika init` then `sika serve` with the environment's SIKA_ variables
    replaced by the probe's own (`extra` adds to them); waits for /healthz."""

    def __init__(self, binary, **extra):
        tmp = tempfile.mkdtemp()
        ports = [free_port() for _ in range(3)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SIKA_")}
        env.update(SIKA_DATA_DIR=f"{tmp}/data", SIKA_LIVE_ADDR=f"127.0.0.1:{ports[0]}",
                   SIKA_SANDBOX_ADDR=f"127.0.0.1:{ports[1]}", SIKA_ADMIN_ADDR=f"127.0.0.1:{ports[2]}",
                   SIKA_RATE_LIMIT="1000000", **extra)
        init = subprocess.run([binary, "init", "--json"], env=env, capture_output=True, check=True)
        self.key = json.loads(init.stdout)["sandboxKey"]
        self.process = subprocess.Popen([binary, "serve"], env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{ports[1]}"
        for _ in range(200):
            try:
                urllib.request.urlopen(self.base + "/healthz"); break
            except Exception:
                time.sleep(0.05)

    def call(self, method, path, body=None, auth=True):
        """The answer's JSON, or its bytes when it is not JSON (a hosted page)."""
        headers = {"Content-Type": "application/json"}
        if auth:
            headers["Authorization"] = f"Bearer {self.key}"
        req = urllib.request.Request(self.base + path, method=method,
                                     data=json.dumps(body).encode() if body else None, headers=headers)
        with urllib.request.urlopen(req) as r:
            raw = r.read()
            return json.loads(raw) if r.headers.get_content_type() == "application/json" else raw

    def timed(self, path, tries, auth=True):
        """The median of `tries` reads of `path` in seconds, and the last answer."""
        times = []
        for _ in range(tries):
            t = time.perf_counter(); answer = self.call("GET", path, auth=auth); times.append(time.perf_counter() - t)
        times.sort()
        return times[len(times) // 2], answer

    def stop(self):
        self.process.terminate(); self.process.wait()

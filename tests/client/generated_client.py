#!/usr/bin/env python3
"""A client generated from the node's own OpenAPI document, used for real.

    python3 tests/client/generated_client.py path/to/sika

Needs `openapi-python-client` and `openapi-spec-validator` from PyPI (.ci/run
installs them). It starts the binary on free loopback ports in a temporary
data directory, checks the public document with an independent validator,
generates a Python client from it, and with that client creates 45 payouts
and walks them back ten at a time by `nextCursor`. Prints 'N passed, M failed'
last, like the project's other checks.
"""
import importlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

BIN = sys.argv[1] if len(sys.argv) > 1 else "./target/release/sika"
PAYOUTS = 45
PAGE = 10


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def post(url, key, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    req.add_header("Content-Type", "application/json")
    req.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def main():
    results = []

    def check(name, cond, detail=""):
        results.append(bool(cond))
        print(("PASS " if cond else "FAIL ") + name + ("" if cond else f": {detail}"))

    tmp = tempfile.mkdtemp(prefix="sika-client-")
    ports = {k: free_port() for k in ("LIVE", "SANDBOX", "ADMIN")}
    env = dict(os.environ, SIKA_DATA_DIR=os.path.join(tmp, "data"), SIKA_TIME_SCALE="0.001",
               SIKA_RATE_LIMIT="100000",
               **{f"SIKA_{k}_ADDR": f"127.0.0.1:{p}" for k, p in ports.items()})
    creds = json.loads(subprocess.run([BIN, "init", "--json"], env=env, capture_output=True, check=True,
                                      text=True).stdout)
    log = open(os.path.join(tmp, "serve.log"), "wb")
    node = subprocess.Popen([BIN, "serve"], env=env, stdout=log, stderr=log)
    sandbox = f"http://127.0.0.1:{ports['SANDBOX']}"
    key = creds["sandboxKey"]
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(sandbox + "/v1/openapi.json", timeout=5) as r:
                    document = json.loads(r.read())
                break
            except OSError:
                time.sleep(0.1)
        path = os.path.join(tmp, "openapi.json")
        with open(path, "w") as f:
            json.dump(document, f)

        from openapi_spec_validator import validate
        try:
            validate(document)
            check("the public document is valid OpenAPI 3.1 (openapi-spec-validator)", True)
        except Exception as e:  # noqa: BLE001 - the validator's own error types vary
            check("the public document is valid OpenAPI 3.1 (openapi-spec-validator)", False, str(e)[:500])

        admin = f"http://127.0.0.1:{ports['ADMIN']}"
        with urllib.request.urlopen(admin + "/admin/v1/openapi.json", timeout=5) as r:
            admin_document = json.loads(r.read())
        try:
            validate(admin_document)
            check("the admin document is valid OpenAPI 3.1 (openapi-spec-validator)", True)
        except Exception as e:  # noqa: BLE001
            check("the admin document is valid OpenAPI 3.1 (openapi-spec-validator)", False, str(e)[:500])
        admin_path = os.path.join(tmp, "admin-openapi.json")
        with open(admin_path, "w") as f:
            json.dump(admin_document, f)
        admin_out = os.path.join(tmp, "sika_admin_client")
        gen = subprocess.run(["openapi-python-client", "generate", "--path", admin_path, "--meta", "none",
                              "--output-path", admin_out], capture_output=True, text=True)
        check("openapi-python-client generates an admin client", gen.returncode == 0,
              gen.stdout[-800:] + gen.stderr[-800:])

        out = os.path.join(tmp, "sika_client")
        gen = subprocess.run(["openapi-python-client", "generate", "--path", path, "--meta", "none",
                              "--output-path", out], capture_output=True, text=True)
        check("openapi-python-client generates a client", gen.returncode == 0, gen.stdout[-800:] + gen.stderr[-800:])
        sys.path.insert(0, tmp)
        client_mod = importlib.import_module("sika_client")
        create_payout = importlib.import_module("sika_client.api.payouts.create_payout")
        list_payouts = importlib.import_module("sika_client.api.payouts.list_payouts")
        models = importlib.import_module("sika_client.models")
        types = importlib.import_module("sika_client.types")

        post(sandbox + "/v1/simulations/deposits", key, {"currency": "GHS", "amount": "1000.00"})
        client = client_mod.AuthenticatedClient(base_url=sandbox, token=key)
        created = []
        for i in range(PAYOUTS):
            body = models.CreatePayout(
                from_=models.PayoutAmount(currency="GHS", amount="1.00"),
                to=models.PayoutTarget(code="mtn_gh", account_number="+233241234567"),
                external_reference=f"generated-client-{i}",
            )
            response = create_payout.sync_detailed(client=client, body=body)
            if response.status_code != 201:
                check(f"payout {i} created through the generated client", False,
                      (response.status_code, response.content[:300]))
                break
            created.append(response.parsed.payout.id)
        check(f"{PAYOUTS} payouts created through the generated client", len(created) == PAYOUTS, len(created))

        seen, pages, cursor = [], 0, types.UNSET
        while pages < 20:
            page = list_payouts.sync(client=client, limit=PAGE, cursor=cursor)
            pages += 1
            seen.extend(p.id for p in page.data)
            if not page.has_more:
                break
            cursor = page.next_cursor
        check("walking by nextCursor returns every payout once, newest first",
              seen == list(reversed(created)), (len(seen), len(set(seen))))
        check(f"in {-(-PAYOUTS // PAGE)} pages of at most {PAGE}", pages == -(-PAYOUTS // PAGE), pages)

        # The admin client reads the same payouts, typed, with their organization.
        admin_mod = importlib.import_module("sika_admin_client")
        search_payouts = importlib.import_module("sika_admin_client.api.activity.search_payouts")
        operator = admin_mod.AuthenticatedClient(base_url=admin, token=creds["adminToken"])
        found = search_payouts.sync(client=operator, stack="sandbox", limit="100")
        check("the generated admin client finds the payouts with their organization",
              found is not None and len(found.data) == PAYOUTS
              and all(p.organization_id == creds["organizationId"] for p in found.data),
              found and len(found.data))
    finally:
        node.terminate()
        node.wait(timeout=30)
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())

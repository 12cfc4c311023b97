"""Times the reads of one payment link that took N failed attempts and one
partial payment (issue 16.4): the payer's hosted page (GET /pay/{link}), the
merchant's single read (GET /v1/payment-links/{id}, which lists every
attempt) and the merchant's list (GET /v1/payment-links). Prints the median
of 15 reads of each. Usage: link_reads.py BINARY N"""
import concurrent.futures, sys, time

from node import Node

binary, n = sys.argv[1], int(sys.argv[2])
node = Node(binary, SIKA_TIME_SCALE="0.001", SIKA_CHECKOUT_ATTEMPTS_PER_LINK=str(n + 1),
            SIKA_CHECKOUT_ATTEMPTS_PER_ADDRESS=str(n + 1))

link = node.call("POST", "/v1/payment-links", {"currency": "GHS", "amount": "100.00", "title": "Probe",
                                               "allowedMethods": ["mobile_money"]})["paymentLink"]["id"]

def attempt(amount):
    # Cents 51: the sandbox declines the charge.
    node.call("POST", f"/pay/{link}/sessions", {"amount": amount, "method": "mobile_money", "network": "mtn_gh",
                                                "phone": "+233241234567"}, auth=False)

with concurrent.futures.ThreadPoolExecutor(16) as pool:
    list(pool.map(attempt, ["2.51"] * n))
attempt("40.00")
for _ in range(600):
    sessions = node.call("GET", f"/v1/payment-links/{link}")["paymentLink"]["sessions"]
    if all(s["status"] != "pending" for s in sessions):
        break
    time.sleep(0.1)

def timed_ms(path, auth=True):
    seconds, answer = node.timed(path, tries=15, auth=auth)
    return seconds * 1000, answer

page_ms, page = timed_ms(f"/pay/{link}", auth=False)
single_ms, single = timed_ms(f"/v1/payment-links/{link}")
list_ms, listed = timed_ms("/v1/payment-links?limit=20")
single = single["paymentLink"]
assert b"remaining 60.00 GHS" in page, "the page shows the totals"
assert (single["totalReceived"], listed["data"][0]["totalReceived"]) == ("40.00", "40.00")
print(f"{binary}: {n} failed attempts and one payment on a link; GET /pay/{{link}} {page_ms:.1f} ms; "
      f"GET /v1/payment-links/{{id}} {single_ms:.1f} ms ({len(single['sessions'])} sessions); "
      f"GET /v1/payment-links {list_ms:.1f} ms")
node.stop()

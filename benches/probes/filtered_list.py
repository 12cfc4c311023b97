"""Times a filtered list that matches nothing against an unfiltered one on a
node holding N collections (issue 16.14). Usage: filtered_list.py BINARY N"""
import concurrent.futures, sys

from node import Node

binary, n = sys.argv[1], int(sys.argv[2])
node = Node(binary)

def create(i):
    node.call("POST", "/v1/collections", {"amount": "10.00", "currency": "GHS", "code": "mtn_gh",
                                          "accountNumber": "+233241234567", "externalReference": f"c-{i}"})

with concurrent.futures.ThreadPoolExecutor(16) as pool:
    list(pool.map(create, range(n)))

unf, _ = node.timed("/v1/collections?limit=20", tries=5)
fil, page = node.timed("/v1/collections?externalReference=nothing-like-it", tries=5)
print(f"{binary}: {n} collections; unfiltered {unf*1000:.1f} ms; filtered, no match {fil*1000:.1f} ms "
      f"(data {len(page['data'])}, hasMore {page['hasMore']})")
node.stop()

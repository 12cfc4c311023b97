"""Where a ledger's pages go: reads a stopped node's redb file (redb 4's
on-disk format: the super-header's primary commit slot, the user root's
table tree, then the `records` table's tree) and prints, for each space
(`storage::Space`, a key's first byte), the leaf pages whose keys are all
of that space, how full they are and how many entries they hold.
`sika footprint` gives the records and their bytes per space; this gives
the pages, which is what the file pays (issue 36: an idempotency entry's
leaves are half full where the journal's are full).

Usage: leaves_per_space.py sandbox.redb [payouts]
  With the number of payouts the ledger holds, also the bytes of leaves
  per payout for each space.
"""
import struct
import sys

SPACES = {0: "Meta", 1: "Account", 2: "OrgAccount", 3: "Transfer", 4: "Journal", 5: "Idempotency",
          6: "Quote", 7: "Conversion", 8: "Event", 9: "ListIndex", 10: "Deposit", 11: "Document",
          12: "Job", 13: "Payout", 14: "Collection", 15: "Order", 16: "CollectionGroup",
          17: "CollectionTally", 18: "CapUsage", 19: "EventId", 20: "OpenMovement", 21: "Refund",
          22: "RefundTally", 40: "Dispute", 41: "DisputeShortfalls", 51: "BalanceChange",
          52: "BalanceMark", 53: "BalanceHead", 54: "Name", 55: "IdempotencyDigest"}
LEAF, BRANCH = 1, 2

data = open(sys.argv[1], "rb").read()
payouts = int(sys.argv[2]) if len(sys.argv) > 2 else 0
page_size, region_header_pages, region_data_pages = struct.unpack_from("<III", data, 12)
primary_slot = 64 + 128 * (data[9] & 1)
user_root = struct.unpack_from("<Q", data, primary_slot + 8)[0]
region_bytes = (region_header_pages + region_data_pages) * page_size


def page(number):
    """The bytes of page `number` (redb's PageNumber: index, region, order)."""
    order = number >> 59
    index = number & (0xFFFFF >> order)
    region = (number >> 20) & 0xFFFFF
    start = page_size + region * region_bytes + region_header_pages * page_size + index * (page_size << order)
    return data[start:start + (page_size << order)]


def leaf_entries(memory):
    """A leaf's keys and values, and the bytes it uses."""
    count = struct.unpack_from("<H", memory, 2)[0]
    key_ends = struct.unpack_from("<%dI" % count, memory, 4)
    value_ends = struct.unpack_from("<%dI" % count, memory, 4 + 4 * count)
    keys, values, start = [], [], 4 + 8 * count
    for end in key_ends:
        keys.append(memory[start:end])
        start = end
    for end in value_ends:
        values.append(memory[start:end])
        start = end
    return keys, values, start


def children(memory):
    count = struct.unpack_from("<H", memory, 2)[0]
    return [struct.unpack_from("<Q", memory, 8 + 16 * (count + 1) + 8 * i)[0] for i in range(count + 1)]


def walk(number, visit):
    memory = page(number)
    if memory[0] not in (LEAF, BRANCH):
        sys.exit(f"page {number:#x} is neither a leaf nor a branch: is this a redb 4 file of a stopped node?")
    visit(memory)
    if memory[0] == BRANCH:
        for child in children(memory):
            walk(child, visit)


tables = {}
walk(user_root, lambda m: m[0] == LEAF and tables.update(zip(*leaf_entries(m)[:2])))
# A table's definition: its type (1 byte), its length (8), whether it has a
# root (1), then the root's page number.
records_root = struct.unpack_from("<Q", tables[b"records"], 10)[0]
spaces, branches = {}, [0]


def count(memory):
    if memory[0] == BRANCH:
        branches[0] += 1
        return
    keys, _, used = leaf_entries(memory)
    kinds = {key[0] for key in keys}
    name = SPACES.get(keys[0][0], str(keys[0][0])) if len(kinds) == 1 else "(mixed)"
    leaves, used_bytes, entries = spaces.get(name, (0, 0, 0))
    spaces[name] = (leaves + 1, used_bytes + used, entries + len(keys))


walk(records_root, count)
print(f"{'space':>16} {'leaves':>7} {'fill':>5} {'entries':>8}" + (f" {'leaf bytes/payout':>18}" if payouts else ""))
for name, (leaves, used, entries) in sorted(spaces.items(), key=lambda item: -item[1][0]):
    line = f"{name:>16} {leaves:>7} {used / (leaves * page_size):>5.2f} {entries:>8}"
    if payouts:
        line += f" {leaves * page_size / payouts:>18.0f}"
    print(line)
total = sum(leaves for leaves, _, _ in spaces.values())
print(f"{'leaves':>16} {total:>7}; branches {branches[0]}" +
      (f"; {(total + branches[0]) * page_size / payouts:.0f} bytes of pages per payout" if payouts else ""))

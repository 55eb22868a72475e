#!/usr/bin/python3
"""Exits 0 when two embedding table files (docs/formats/checkpoint-embedding.md) hold the same
content: header fields, OOV row, and rows and pending ids compared by id, since rows appear in the
writer's slot order, which a reload may change (as tests/test_util.h ReadCanonicalTable does)."""
import struct
import sys


def canonical(path):
    d = open(path, "rb").read()
    assert d[:8] == b"RTEMBTB1", path + ": not a table file"
    dim, width, name_len = struct.unpack_from("<III", d, 12)
    rows_n, pending_n = struct.unpack_from("<QQ", d, 24)
    # Version 2 added two counters to the header and a tick to pending records.
    (version,) = struct.unpack_from("<I", d, 8)
    name_at, pending_bytes = (96, 16) if version >= 2 else (80, 12)
    header = d[8:name_at + name_len]
    pos = name_at + name_len + 4
    payload = 4 * (dim + width)
    oov = d[pos:pos + 4 + payload]
    pos += 4 + payload + 4
    rows, pending = [], []
    left = rows_n
    while left > 0:
        (n,) = struct.unpack_from("<I", d, pos)
        pos += 4
        for _ in range(n):
            rows.append((struct.unpack_from("<Q", d, pos)[0], d[pos + 8:pos + 16 + payload]))
            pos += 16 + payload
        pos += 4
        left -= n
    left = pending_n
    while left > 0:
        (n,) = struct.unpack_from("<I", d, pos)
        pos += 4
        for _ in range(n):
            pending.append((struct.unpack_from("<Q", d, pos)[0], d[pos + 8:pos + pending_bytes]))
            pos += pending_bytes
        pos += 4
        left -= n
    assert d[pos:] == b"RTEMBEND", path + ": bad end marker"
    return header, oov, sorted(rows), sorted(pending)


sys.exit(0 if canonical(sys.argv[1]) == canonical(sys.argv[2]) else 1)

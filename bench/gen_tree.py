#!/usr/bin/env python3
"""Deterministic benchmark tree for the grep/glob/read builtins.

    python3 bench/gen_tree.py OUT_DIR

writes OUT_DIR/tree: 2,000 files (20 dirs x 5 subdirs x 20 files, three in
four of them .txt, the rest .md/.rs/.json) of about 50 MB of word lines, with
80 planted lines matching the regex `TNX_NEEDLE_[0-9]+_ZQ`; and
OUT_DIR/read-1mib.txt, 1 MiB of text lines, and OUT_DIR/read-1mib.png, 1 MiB
of binary bytes behind a PNG signature. Same bytes on every run and every
Python 3: a fixed linear congruential generator, no `random`.
"""
import os
import sys

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo "
         "lima mike november oscar papa quebec romeo sierra tango uniform victor "
         "whiskey xray yankee zulu tool nexus skill builtin render execute "
         "schema vector adapter provider request response buffer stream token "
         "parser walker search match line path glob regex thread kernel signal "
         "process group socket header body status retry timeout").split()
TOTAL_BYTES = 50 * 1000 * 1000
FILES = 2000
PLANTED = 80


class Lcg:
    def __init__(self, seed):
        self.state = seed

    def next(self, bound):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return (self.state >> 33) % bound


def line_pool(rng, n):
    pool = []
    for _ in range(n):
        words = [WORDS[rng.next(len(WORDS))] for _ in range(4 + rng.next(12))]
        pool.append((" ".join(words) + "\n").encode())
    return pool


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_tree.py OUT_DIR")
    out = sys.argv[1]
    rng = Lcg(20261129)
    pool = line_pool(rng, 4096)
    exts = ["txt", "txt", "txt", "md", "txt", "txt", "rs", "txt", "txt", "json", "txt", "txt"]
    paths = []
    for d in range(20):
        for s in range(5):
            for f in range(20):
                i = len(paths)
                paths.append(os.path.join(out, "tree", f"dir{d:02}", f"sub{s}", f"file{f:02}.{exts[i % len(exts)]}"))
    # Plant in 80 distinct files spread over the tree.
    planted = {(i * 7919) % FILES: i for i in range(PLANTED)}
    per_file = TOTAL_BYTES // FILES
    total = 0
    for i, p in enumerate(paths):
        os.makedirs(os.path.dirname(p), exist_ok=True)
        size = per_file // 2 + rng.next(per_file)
        chunks, n = [], 0
        plant_at = size // 2 if i in planted else -1
        while n < size:
            if plant_at >= 0 and n >= plant_at:
                chunks.append(f"planted TNX_NEEDLE_{planted[i]}_ZQ here\n".encode())
                plant_at = -1
            line = pool[rng.next(len(pool))]
            chunks.append(line)
            n += len(line)
        data = b"".join(chunks)
        total += len(data)
        with open(p, "wb") as fh:
            fh.write(data)
    body, n = [], 0
    while n < 1 << 20:
        line = pool[rng.next(len(pool))]
        body.append(line)
        n += len(line)
    with open(os.path.join(out, "read-1mib.txt"), "wb") as fh:
        fh.write(b"".join(body)[: 1 << 20])
    # A 1 MiB "PNG" (the signature, then generator bytes): `read` returns it
    # as a base64 content part (SPEC §1B); the bytes are never decoded.
    png = bytearray(b"\x89PNG\r\n\x1a\n")
    while len(png) < 1 << 20:
        png += rng.next(1 << 32).to_bytes(4, "little")
    with open(os.path.join(out, "read-1mib.png"), "wb") as fh:
        fh.write(bytes(png[: 1 << 20]))
    print(f"{len(paths)} files, {total} bytes, {PLANTED} planted matches under {out}/tree")


if __name__ == "__main__":
    main()

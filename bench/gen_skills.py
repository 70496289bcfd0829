#!/usr/bin/env python3
"""Deterministic skills tree for the skills benchmarks.

1,000 skills, each a SKILL.md with a ~2 KB body and 3 sibling files, spread
over 10 category folders. Same bytes on every run and every machine.

usage: gen_skills.py OUT_DIR [COUNT]
"""
import os
import sys

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu "
         "nu xi omicron pi rho sigma tau upsilon phi chi psi omega").split()


def body(i: int) -> str:
    lines = [f"# Skill {i:04d}", "", "## Steps", ""]
    n = 0
    while sum(len(l) + 1 for l in lines) < 2048:
        words = [WORDS[(i * 7 + n * 3 + k) % len(WORDS)] for k in range(12)]
        lines.append(f"{n + 1}. " + " ".join(words) + ".")
        n += 1
    return "\n".join(lines) + "\n"


def main() -> None:
    out = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    for i in range(count):
        d = os.path.join(out, f"cat{i % 10}", f"skill-{i:04d}")
        os.makedirs(os.path.join(d, "scripts"), exist_ok=True)
        os.makedirs(os.path.join(d, "reference"), exist_ok=True)
        with open(os.path.join(d, "SKILL.md"), "w") as f:
            f.write(f"---\nname: skill-{i:04d}\ndescription: Benchmark skill number {i} of {count}.\n---\n")
            f.write(body(i))
        with open(os.path.join(d, "scripts", "run.sh"), "w") as f:
            f.write(f"#!/bin/sh\necho skill {i}\n")
        with open(os.path.join(d, "reference", "notes.md"), "w") as f:
            f.write(f"Notes for skill {i}.\n")
        with open(os.path.join(d, "data.txt"), "w") as f:
            f.write(f"{i}\n")


if __name__ == "__main__":
    main()

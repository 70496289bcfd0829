#!/usr/bin/env python3
"""Runs every code block of README.md and docs/*.md marked as runnable.

A block is runnable when its info string has the word `run` after the
language: ```c run, ```python run, ```go run, ```sh run. Each is extracted
and executed against an installed library (scripts/install.sh's PREFIX):

- c: compiled with `pkg-config --cflags --libs toolnexus` (PREFIX's), run
  from the repository root with PREFIX/lib on the loader's path;
- python: the binding's sources (bindings/python/src) with TOOLNEXUS_LIB
  set to PREFIX's library, run from the repository root;
- go: a `main` package in a temporary module whose `replace` points at
  bindings/go, built with cgo through PREFIX's pkg-config, run from the
  repository root;
- sh: `sh -eux` in a temporary directory, PREFIX/bin first on PATH, $REPO
  the repository root.

A block fails when it exits non-zero (or does not build); the failure names
FILE:LINE of the block's opening fence. It also checks that docs/c-api.md
names every `tn_*` function include/toolnexus.h declares.

    scripts/doc_blocks.py PREFIX     run every block
    scripts/doc_blocks.py --list     list the runnable blocks
    scripts/doc_blocks.py --check    only the checks that run nothing (c-api.md, links)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LANGS = ("c", "python", "go", "sh")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
TIMEOUT_S = 120


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def doc_files() -> list[Path]:
    return [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))


def blocks(path: Path) -> list[Block]:
    """The runnable blocks of one Markdown file, in order."""
    out: list[Block] = []
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if close and close.group(2).startswith(fence) and not close.group(3).strip():
                break
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        else:
            raise SystemExit(f"{path.relative_to(REPO)}:{start + 1}: code block never closed")
        i += 1
        words = info.split()
        if len(words) >= 2 and words[1] == "run":
            if words[0] not in LANGS:
                raise SystemExit(
                    f"{path.relative_to(REPO)}:{start + 1}: 'run' block in unknown language '{words[0]}' "
                    f"(one of {', '.join(LANGS)})"
                )
            out.append(Block(path, start + 1, words[0], "\n".join(body) + "\n"))
    return out


def check_api() -> list[str]:
    """docs/c-api.md must name every function the header declares."""
    header = (REPO / "include" / "toolnexus.h").read_text(encoding="utf-8")
    declared = sorted(set(re.findall(r"\b(tn_[a-z0-9_]+)\s*\(", header)))
    page = (REPO / "docs" / "c-api.md").read_text(encoding="utf-8")
    named = set(re.findall(r"\btn_[a-z0-9_]+\b", page))
    return [f"docs/c-api.md does not mention {f} (declared in include/toolnexus.h)" for f in declared if f not in named]


def slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


def check_links() -> list[str]:
    """Every relative link of the docs names a file that exists (and a
    heading of it, for a `#anchor` into a Markdown file)."""
    problems = []
    for f in doc_files():
        text = f.read_text(encoding="utf-8")
        for m in re.finditer(r"\]\(([^)#\s]*)(#[^)\s]*)?\)", text):
            target, anchor = m.group(1), m.group(2)
            if re.match(r"^[a-z]+:", target):
                continue
            line = text.count("\n", 0, m.start()) + 1
            path = (f.parent / target) if target else f
            if not path.exists():
                problems.append(f"{f.relative_to(REPO)}:{line}: link to missing {target}")
            elif anchor and path.suffix == ".md":
                heads = re.findall(r"^#+ (.*)$", path.read_text(encoding="utf-8"), re.M)
                if anchor[1:] not in {slug(h) for h in heads}:
                    problems.append(f"{f.relative_to(REPO)}:{line}: no heading {anchor} in {target or f.name}")
    return problems


def run(cmd: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None) -> tuple[int, str]:
    try:
        p = subprocess.run(
            cmd, cwd=cwd, env=env, input=stdin, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {TIMEOUT_S} s: {' '.join(cmd)}"
    return p.returncode, p.stdout


def library(prefix: Path) -> Path:
    for libdir in ("lib", "lib64"):
        so = prefix / libdir / "libtoolnexus.so"
        if so.exists():
            return so
    raise SystemExit(f"no libtoolnexus.so under {prefix}/lib (run scripts/install.sh with PREFIX={prefix})")


class Runner:
    def __init__(self, prefix: Path, tmp: Path) -> None:
        self.prefix = prefix
        self.tmp = tmp
        lib = library(prefix)
        env = dict(os.environ)
        libdir = str(lib.parent)
        env["PKG_CONFIG_PATH"] = f"{libdir}/pkgconfig" + (":" + env["PKG_CONFIG_PATH"] if env.get("PKG_CONFIG_PATH") else "")
        env["LD_LIBRARY_PATH"] = libdir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        env["PATH"] = f"{prefix}/bin:{env['PATH']}"
        env["TOOLNEXUS_LIB"] = str(lib)
        env["REPO"] = str(REPO)
        self.env = env
        self.n = 0

    def scratch(self) -> Path:
        self.n += 1
        d = self.tmp / f"block{self.n}"
        d.mkdir()
        return d

    def c(self, b: Block) -> tuple[int, str]:
        d = self.scratch()
        (d / "main.c").write_text(b.code)
        flags = subprocess.run(
            ["pkg-config", "--cflags", "--libs", "toolnexus"], env=self.env,
            text=True, capture_output=True, check=True,
        ).stdout.split()
        rc, out = run(["cc", "-std=c11", "-Wall", "-Werror", "-o", str(d / "prog"), str(d / "main.c"), *flags], d, self.env)
        if rc:
            return rc, "compile failed:\n" + out
        return run([str(d / "prog")], REPO, self.env)

    def python(self, b: Block) -> tuple[int, str]:
        env = dict(self.env)
        src = str(REPO / "bindings" / "python" / "src")
        env["PYTHONPATH"] = src + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        return run([sys.executable, "-"], REPO, env, stdin=b.code)

    def go(self, b: Block) -> tuple[int, str]:
        d = self.scratch()
        (d / "main.go").write_text(b.code)
        (d / "go.mod").write_text(
            "module docblock\n\ngo 1.24\n\n"
            "require github.com/toolnexus/toolnexus-rs/bindings/go v0.0.0\n\n"
            f"replace github.com/toolnexus/toolnexus-rs/bindings/go => {REPO / 'bindings' / 'go'}\n"
        )
        env = dict(self.env, GOWORK="off", GOFLAGS="-mod=mod")
        env["CGO_LDFLAGS"] = f"-L{library(self.prefix).parent}"
        rc, out = run(["go", "build", "-o", "prog", "."], d, env)
        if rc:
            return rc, "go build failed:\n" + out
        return run([str(d / "prog")], REPO, env)

    def sh(self, b: Block) -> tuple[int, str]:
        d = self.scratch()
        return run(["sh", "-eux"], d, self.env, stdin=b.code)


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[1] == "--list":
        for f in doc_files():
            for b in blocks(f):
                print(f"{b.where} {b.lang}")
        return 0
    problems = check_api() + check_links()
    if len(argv) == 2 and argv[1] == "--check":
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    prefix = Path(argv[1]).resolve()
    all_blocks = [b for f in doc_files() for b in blocks(f)]
    tmp = Path(tempfile.mkdtemp(prefix="doc_blocks."))
    try:
        runner = Runner(prefix, tmp)
        failed = 0
        for b in all_blocks:
            rc, out = getattr(runner, b.lang)(b)
            if rc:
                failed += 1
                print(f"doc block FAILED: {b.where} ({b.lang}, exit {rc})\n{out.rstrip()}\n", file=sys.stderr)
        for p in problems:
            print(p, file=sys.stderr)
        print(f"doc blocks: {len(all_blocks) - failed} passed, {failed} failed; "
              f"{len(problems)} problems with c-api.md or links")
        return 1 if failed or problems else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Build hook: the wheel carries libtoolnexus.so inside the package.

Metadata is in pyproject.toml; this file only adds two commands:

- ``build_py`` also runs ``cargo build --release`` in the repository two
  levels up (honouring ``CARGO_TARGET_DIR``; a no-op when the release build is
  current) and copies ``libtoolnexus.so`` into the built package, stripped.
  ``TOOLNEXUS_BUNDLE_LIB=/path/libtoolnexus.so`` bundles that file instead and
  runs no cargo (a library built elsewhere, or a tree without the Rust crate).
- ``bdist_wheel`` tags the wheel ``py3-none-manylinux_2_X_<arch>``: any
  Python 3 (the package is pure ctypes, nothing is compiled against Python),
  and the newest glibc symbol version the bundled library requires, read from
  its ELF version references (``objdump -p``; ``GLIBC_ABI_DT_RELR``, the
  packed relocations build.rs asks for, means 2.36), so the tag names
  exactly the oldest glibc the wheel runs on.
"""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
from setuptools.command.bdist_wheel import bdist_wheel

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LIB = "libtoolnexus.so"


def _log(msg: str) -> None:
    print(f"toolnexus-rs build: {msg}", file=sys.stderr, flush=True)


def _release_library() -> Path:
    explicit = os.environ.get("TOOLNEXUS_BUNDLE_LIB")
    if explicit:
        lib = Path(explicit)
        if not lib.is_file():
            raise SystemExit(f"TOOLNEXUS_BUNDLE_LIB={explicit} is not a file")
        return lib
    if not (REPO / "Cargo.toml").is_file():
        raise SystemExit(
            f"no Rust crate at {REPO} (this package builds from a toolnexus-rs checkout, "
            "bindings/python): build the wheel there, or set TOOLNEXUS_BUNDLE_LIB to a libtoolnexus.so"
        )
    cargo = os.environ.get("CARGO", "cargo")
    if shutil.which(cargo) is None:
        raise SystemExit(
            "cargo is not on PATH: building this package compiles the Rust library "
            "(https://rustup.rs); on a machine without Rust install a built wheel instead"
        )
    _log(f"cargo build --release in {REPO}")
    subprocess.run([cargo, "build", "--release", "--quiet", "--lib"], cwd=REPO, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    if not target.is_absolute():
        target = REPO / target
    lib = target / "release" / LIB
    if not lib.is_file():
        raise SystemExit(f"cargo build --release did not produce {lib}")
    return lib


class BuildPyWithLibrary(build_py):
    def run(self) -> None:
        super().run()
        src = _release_library()
        dest = Path(self.build_lib) / "toolnexus_rs" / LIB
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        os.chmod(dest, 0o755)
        # The release build keeps its symbol table for profilers; the wheel,
        # like scripts/install.sh, ships the library without it.
        if shutil.which("strip"):
            subprocess.run(["strip", "--strip-unneeded", str(dest)], check=True)
        _log(f"bundled {src} as {dest} ({dest.stat().st_size} bytes)")


def _glibc_needed(lib: Path) -> tuple[int, int]:
    """The newest GLIBC_x.y the library references (objdump -p's version
    references); the build machine's glibc when objdump is missing."""
    try:
        out = subprocess.run(["objdump", "-p", str(lib)], capture_output=True, text=True, check=True).stdout
        versions = [(int(a), int(b)) for a, b in re.findall(r"\bGLIBC_(\d+)\.(\d+)(?:\.\d+)?\b", out)]
        # Packed relative relocations (build.rs links with them when the
        # toolchain supports them) need a loader that knows DT_RELR: glibc
        # 2.36 and later, whatever the newest versioned symbol says.
        if "GLIBC_ABI_DT_RELR" in out:
            versions.append((2, 36))
        if versions:
            return max(versions)
    except (OSError, subprocess.CalledProcessError):
        pass
    name, ver = platform.libc_ver()
    if name != "glibc" or not ver:
        raise SystemExit("cannot tell which glibc the library needs (no objdump, not glibc)")
    major, minor = ver.split(".")[:2]
    return int(major), int(minor)


class BinaryDistribution(Distribution):
    """A platform distribution: the files go to platlib (the wheel's root,
    `Root-Is-Purelib: false`), where auditwheel and installers expect a
    shared library."""

    def has_ext_modules(self) -> bool:
        return True


class PlatformWheel(bdist_wheel):
    def get_tag(self) -> tuple[str, str, str]:
        if sys.platform != "linux":
            raise SystemExit("the bundled-library wheel is built on Linux only")
        lib = Path(self.bdist_dir) / "toolnexus_rs" / LIB
        if not lib.is_file():  # get_tag may run before the files are in bdist_dir
            lib = Path(self.get_finalized_command("build_py").build_lib) / "toolnexus_rs" / LIB
        major, minor = _glibc_needed(lib)
        return "py3", "none", f"manylinux_{major}_{minor}_{platform.machine()}"


setup(distclass=BinaryDistribution, cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel})

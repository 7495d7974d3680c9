"""Installs the Toolwire server and its Python dependencies into the extension.

The convention of Microsoft's Python tools extension template and ruff-vscode: the
extension carries the server's packages in ``client-vscode/bundled/libs`` and runs
``python -m toolwire serve`` with that folder on ``PYTHONPATH``, so the user's
interpreter needs nothing installed.

Three of the dependencies carry compiled extension modules: ``pydantic_core`` and
``jiter`` are built per CPython minor version, ``watchfiles`` for the stable ABI. Their
module files are named per version (``_pydantic_core.cpython-312-x86_64-linux-gnu.so``),
so wheels for several versions can share one folder: the packages are installed once
per supported version (binary wheels only, for the target platform, versions pinned by
``constraints.txt``) and merged. Every pure-Python file must come out identical for
every version; a difference stops the build.

Usage::

    python scripts/bundle_python.py --target linux-x64 [--out client-vscode/bundled/libs]

Raises:
    SystemExit: unknown target, a failed pip run, or files that differ between versions.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: CPython minor versions the bundle supports (the server needs 3.11+).
PYTHON_VERSIONS = ("3.11", "3.12", "3.13", "3.14")

#: vsce target → pip platform tags (newest first is not required; pip takes any that match).
PLATFORMS: dict[str, tuple[str, ...]] = {
    "linux-x64": ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"),
    "linux-arm64": ("manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64"),
    "alpine-x64": ("musllinux_1_2_x86_64", "musllinux_1_1_x86_64"),
    "alpine-arm64": ("musllinux_1_2_aarch64", "musllinux_1_1_aarch64"),
    "darwin-x64": ("macosx_10_12_x86_64", "macosx_10_9_x86_64"),
    "darwin-arm64": ("macosx_11_0_arm64",),
    "win32-x64": ("win_amd64",),
    "win32-arm64": ("win_arm64",),
}


def pip(*args: str) -> None:
    """Runs pip of this interpreter quietly; exits with pip's status on failure."""
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args]
    result = subprocess.run(command, check=False)
    if result.returncode != 0:
        sys.exit(f"pip failed ({result.returncode}): {' '.join(command)}")


def build_wheel(work: Path) -> Path:
    """Builds the toolwire wheel from the repository; returns its path."""
    wheels = work / "wheel"
    pip("wheel", "--no-deps", "-w", str(wheels), str(ROOT))
    (wheel,) = wheels.glob("toolwire-*.whl")
    return wheel


def install(wheel: Path, version: str, platforms: tuple[str, ...], into: Path) -> None:
    """Installs ``wheel`` and its pinned dependencies for one CPython version."""
    tags = [arg for tag in platforms for arg in ("--platform", tag)]
    pip(
        "install", "--target", str(into), "--no-compile", "--only-binary=:all:",
        "--implementation", "cp", "--python-version", version, *tags,
        "-c", str(ROOT / "constraints.txt"), str(wheel),
    )


def merge(source: Path, into: Path) -> None:
    """Copies files of ``source`` missing from ``into``; identical paths must be equal.

    dist-info bookkeeping (RECORD, WHEEL, SBOMs) names the wheel's tag and may differ;
    the first version's copy is kept.
    """
    for path in sorted(source.rglob("*")):
        if path.is_dir():
            continue
        relative = path.relative_to(source)
        target = into / relative
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        elif relative.parts[0].endswith(".dist-info"):
            continue
        elif not filecmp.cmp(path, target, shallow=False):
            sys.exit(f"{relative} differs between Python versions; cannot share one folder")


def main() -> None:
    """Parses the arguments and writes the bundle (replacing an older one)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="linux-x64", choices=sorted(PLATFORMS))
    parser.add_argument("--out", type=Path, default=ROOT / "client-vscode" / "bundled" / "libs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="toolwire-bundle-") as temp:
        work = Path(temp)
        wheel = build_wheel(work)
        merged = work / "merged"
        for version in PYTHON_VERSIONS:
            folder = work / version
            install(wheel, version, PLATFORMS[args.target], folder)
            if not merged.exists():
                shutil.copytree(folder, merged)
            else:
                merge(folder, merged)
        # Console scripts name the build machine's interpreter; the extension runs `-m toolwire`.
        shutil.rmtree(merged / "bin", ignore_errors=True)
        for cache in merged.rglob("__pycache__"):
            shutil.rmtree(cache)
        shutil.rmtree(args.out, ignore_errors=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(merged, args.out)
    print(f"Bundled Toolwire for {args.target}, CPython {', '.join(PYTHON_VERSIONS)}: {args.out}")


if __name__ == "__main__":
    main()

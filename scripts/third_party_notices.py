"""Writes THIRD-PARTY-NOTICES.txt for what the .vsix bundles, from installed metadata.

Two sources, both read from what is actually installed, so the notices cannot drift:

- Python: every distribution in ``client-vscode/bundled/libs`` (written by
  ``bundle_python.py``) except Toolwire itself: its name, version, licence from the core
  metadata (``License-Expression``, else ``License``, else the ``License ::`` classifiers)
  and the text of every licence file in its ``.dist-info`` (PEP 639 ``licenses/`` or the
  usual ``LICENSE*``/``COPYING*``/``NOTICE*`` names).
- npm: every package whose files esbuild put into a bundle, read from the bundles'
  source maps (``dist/**/*.js.map``: each ``sources`` entry under ``node_modules/``
  names the package folder), with the licence from its ``package.json`` and its licence files.

A package with no licence file is still listed, with its declared licence and a note.

Usage::

    python scripts/third_party_notices.py [--extension client-vscode] [--out FILE]

Raises:
    SystemExit: no bundled Python packages or no source maps (build and bundle first).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from importlib.metadata import Distribution, distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LICENSE_FILE = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE|AUTHORS)([-._].*)?$", re.IGNORECASE)
RULE = "=" * 78


@dataclass(frozen=True, slots=True)
class Notice:
    """One bundled package: ``kind`` is "Python" or "npm"; ``texts`` are (file name, text)."""

    kind: str
    name: str
    version: str
    license: str
    url: str
    texts: tuple[tuple[str, str], ...]


def python_notices(libs: Path) -> list[Notice]:
    """Notices for the distributions installed in ``libs`` (Toolwire itself excluded)."""
    notices = []
    for dist in distributions(path=[str(libs)]):
        name = dist.metadata["Name"]
        if name.lower() == "toolwire":
            continue
        notices.append(
            Notice("Python", name, dist.version, _python_license(dist), _python_url(dist), _python_texts(dist))
        )
    return notices


def _python_license(dist: Distribution) -> str:
    meta = dist.metadata
    if meta.get("License-Expression"):
        return meta["License-Expression"]
    declared = meta.get("License") or ""
    if declared and "\n" not in declared and len(declared) < 80:
        return declared
    classifiers = [c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    return ", ".join(classifiers) or "see the licence text below"


def _python_url(dist: Distribution) -> str:
    meta = dist.metadata
    for entry in meta.get_all("Project-URL") or []:
        label, _, url = entry.partition(",")
        if label.strip().lower() in {"source", "source code", "repository", "homepage", "home"}:
            return url.strip()
    return meta.get("Home-page") or ""


def _python_texts(dist: Distribution) -> tuple[tuple[str, str], ...]:
    texts = []
    for file in dist.files or []:
        parts = file.parts
        if not parts[0].endswith(".dist-info"):
            continue
        in_licenses = len(parts) > 2 and parts[1] == "licenses"
        if in_licenses or (len(parts) == 2 and LICENSE_FILE.match(parts[1])):
            text = dist.read_text("/".join(parts[1:]))
            if text:
                texts.append(("/".join(parts[1:]), text))
    return tuple(texts)


def npm_notices(extension: Path, copied: list[str] = ()) -> list[Notice]:
    """Notices for the npm packages esbuild bundled into ``extension/dist``.

    Args:
        extension: The extension folder (``client-vscode``).
        copied: Packages whose files the build copies into ``dist`` unbundled.

    Raises:
        SystemExit: no source maps, or a ``copied`` package that is not installed.
    """
    maps = sorted((extension / "dist").rglob("*.js.map"))
    if not maps:
        sys.exit(f"no source maps under {extension / 'dist'}; build the extension first")
    folders: set[Path] = set()
    for source_map in maps:
        for source in json.loads(source_map.read_text(encoding="utf-8")).get("sources", []):
            folder = _package_folder(source_map.parent, source)
            if folder is not None:
                folders.add(folder)
    for name in copied:
        folder = extension / "node_modules" / name
        if not (folder / "package.json").is_file():
            sys.exit(f"{name} is not installed in {extension / 'node_modules'}")
        folders.add(folder.resolve())
    notices = []
    for folder in sorted(folders):
        manifest = json.loads((folder / "package.json").read_text(encoding="utf-8"))
        repository = manifest.get("repository")
        url = repository.get("url", "") if isinstance(repository, dict) else str(repository or "")
        texts = tuple(
            (path.name, path.read_text(encoding="utf-8", errors="replace"))
            for path in sorted(folder.iterdir())
            if path.is_file() and LICENSE_FILE.match(path.name)
        )
        license_ = manifest.get("license")
        if isinstance(license_, dict):
            license_ = license_.get("type")
        notices.append(Notice("npm", manifest["name"], manifest["version"], str(license_ or "unknown"), url, texts))
    return notices


def _package_folder(base: Path, source: str) -> Path | None:
    """The package folder of a source-map entry, or None for the extension's own files."""
    marker = "node_modules/"
    at = source.rfind(marker)
    if at < 0:
        return None
    rest = source[at + len(marker):].split("/")
    depth = 2 if rest[0].startswith("@") else 1
    folder = (base / source[: at + len(marker)] / "/".join(rest[:depth])).resolve()
    return folder if (folder / "package.json").is_file() else None


def render(notices: list[Notice]) -> str:
    """The notices file: a header, a table of contents, then each package's texts."""
    lines = [
        "Toolwire for VS Code: third-party notices",
        "",
        "This extension bundles the following third-party software (Python packages in",
        "bundled/libs, npm packages compiled into dist/). Each is used under its own licence,",
        "reproduced below from the installed package's metadata.",
        "",
    ]
    lines += [f"- {n.name} {n.version} ({n.kind}): {n.license}" for n in notices]
    for notice in notices:
        lines += ["", RULE, f"{notice.name} {notice.version} ({notice.kind})", f"License: {notice.license}"]
        if notice.url:
            lines.append(f"Source: {notice.url}")
        lines.append(RULE)
        if not notice.texts:
            lines += ["", "(The installed package carries no licence file; its declared licence is above.)"]
        for name, text in notice.texts:
            lines += ["", f"--- {name} ---", "", text.rstrip()]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Collects both kinds of notices and writes the file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extension", type=Path, default=ROOT / "client-vscode")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--copied", action="append", default=[], metavar="PACKAGE",
        help="an npm package whose files the build copies into dist/ as they are (no source map names them)",
    )
    args = parser.parse_args()
    libs = args.extension / "bundled" / "libs"
    python = sorted(python_notices(libs), key=lambda n: n.name.lower())
    if not python:
        sys.exit(f"no Python distributions in {libs}; run scripts/bundle_python.py first")
    npm = sorted(npm_notices(args.extension, args.copied), key=lambda n: n.name.lower())
    out = args.out or args.extension / "THIRD-PARTY-NOTICES.txt"
    out.write_text(render(python + npm), encoding="utf-8")
    print(f"{out}: {len(python)} Python and {len(npm)} npm packages")


if __name__ == "__main__":
    main()

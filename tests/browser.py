"""Load a page in Debian's headless Chromium: the DOM after scripts ran, console messages, a
screenshot. For the report tests; skip where `chromium` is absent (CI installs it)."""

import re
import shutil
import subprocess
from dataclasses import dataclass

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--enable-logging=stderr",
         "--v=0", "--window-size=1400,1800"]

# Chromium logs page console output (console.*, uncaught exceptions) as `...:CONSOLE(line)] "text"`.
_CONSOLE = re.compile(r"CONSOLE\(\d+\)\]|:CONSOLE:")


@dataclass
class Loaded:
    dom: str
    console: list[str]


def _chromium(args: list[str], timeout: int = 90) -> subprocess.CompletedProcess:
    return subprocess.run([shutil.which("chromium"), *FLAGS, *args], capture_output=True, text=True,
                          timeout=timeout)


def load_in_chromium(page: str, screenshot: str, profile: str) -> Loaded:
    url = f"file://{page}"
    dom = _chromium([f"--user-data-dir={profile}", "--dump-dom", url])
    shot = _chromium([f"--user-data-dir={profile}", f"--screenshot={screenshot}", url])
    console = [line for line in (dom.stderr + shot.stderr).splitlines() if _CONSOLE.search(line)]
    assert dom.returncode == 0 and shot.returncode == 0, dom.stderr[-2000:] + shot.stderr[-2000:]
    return Loaded(dom.stdout, console)

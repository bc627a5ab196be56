"""What the browser tests share: where screenshots go, taking one, opening the app on a page."""
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"


def shot(duo, name, full=False, width=1440, height=900, max_height=7000):
    """Save ``artifacts/screenshots/<name>.png``; ``full`` = the whole page (window grown, then restored)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    d = duo.driver
    if full:
        h = d.execute_script("return Math.max(document.documentElement.scrollHeight, document.body.scrollHeight)")
        d.set_window_size(width, min(int(h) + 20, max_height))
        time.sleep(0.8)
    path = SHOTS / f"{name}.png"
    d.save_screenshot(str(path))
    if full:
        d.set_window_size(width, height)
    return path


def start(duo, dash_app, path="/", width=1440, height=900):
    """Serve ``dash_app`` and open ``path`` in a window of the given size."""
    duo.start_server(dash_app)
    duo.driver.set_window_size(width, height)
    if path != "/":
        duo.driver.get(duo.server_url + path)
    return duo


def wait_file(folder: Path, pattern: str, timeout=40) -> Path:
    """The first finished download in ``folder`` matching ``pattern`` (``AssertionError`` after ``timeout`` s)."""
    end = time.time() + timeout
    while time.time() < end:
        got = [p for p in folder.glob(pattern) if not p.name.endswith(".crdownload")]
        if got:
            time.sleep(0.3)
            return got[0]
        time.sleep(0.25)
    raise AssertionError(f"no {pattern} in {folder}: {list(folder.iterdir())}")

"""Write the shipped sample snapshots to samples/snapshots/ (run after changing engine/samples.py)."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.samples import SAMPLES, SAMPLES_DIR, sample_json  # noqa: E402


def main():
    SAMPLES_DIR.mkdir(parents=True, exist_ok=True)
    for name, s in SAMPLES.items():
        if s.ship_json:
            (SAMPLES_DIR / f"{name}.json").write_text(json.dumps(sample_json(name), indent=1) + "\n")
            print("wrote", SAMPLES_DIR / f"{name}.json")


if __name__ == "__main__":
    main()

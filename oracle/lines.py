"""Release lines and the pulsar-broker version each is checked against: the latest patch of the line that
Maven Central serves (the pom's profiles name the same versions)."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent

#: line -> reference pulsar-broker version (None: Maven Central serves no release of the line)
LINES = {
    "3.0": "3.0.7",
    "3.3": "3.3.6",
    "4.0": "4.0.8",
    "4.1": None,
    "4.2": "4.2.4",
    "5.0": "5.0.1",
}

#: why a line has no reference version
UNAVAILABLE = {
    "4.1": "Maven Central serves no 4.1.x pulsar-broker: \"Could not find artifact "
           "org.apache.pulsar:pulsar-broker:jar:4.1.3 in central\"",
}


def available() -> dict[str, str]:
    """line -> version for the lines with a reference version."""
    return {k: v for k, v in LINES.items() if v}


def classpath(version: str) -> str | None:
    """The driver's classes and the line's jars, once ``make oracle-build`` has built them (else None)."""
    base = ROOT / "target" / version
    cp = base / "classpath.txt"
    classes = base / "classes"
    if not cp.is_file() or not (classes / "org" / "shedlab" / "oracle" / "Driver.class").is_file():
        return None
    return f"{classes}:{cp.read_text().strip()}"

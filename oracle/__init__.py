"""The oracle: Pulsar's own load-balancing classes (released ``pulsar-broker`` jars, one per release line)
checking the engine's decisions on generated inputs. Verification only — nothing in ``engine/`` imports
this package, and the product never runs Java.

* :mod:`oracle.lines` — the release lines and the pulsar-broker version each is checked against;
* :mod:`oracle.jvm` — one JVM per line running our driver (``src/main/java``) over JSON lines;
* :mod:`oracle.gen` — inputs biased to the edges, from a seeded RNG or from hypothesis;
* :mod:`oracle.engine_side` — the same input through the engine;
* :mod:`oracle.compare` — campaigns, departures, shrinking, ``docs/fidelity.md``.
"""

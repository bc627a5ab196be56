"""Skewed traffic with a real client (the ``pulsar-client`` wheel): one producer per topic, each at its
own message rate, 1 KiB messages, so bundles differ by message rate and throughput."""
from __future__ import annotations

import threading
import time

PAYLOAD = b"x" * 1024


class Traffic:
    """``rates``: topic -> messages per second. ``start()`` opens one producer per topic (the lookup
    assigns each topic's bundle a broker), ``stop()`` closes them."""

    def __init__(self, service_url: str, rates: dict, log_file=None):
        import pulsar  # the real client; pinned in requirements-dev.txt

        self._pulsar = pulsar
        # the client's reconnect errors while a bundle moves go to a file, not the terminal
        logger = (pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(log_file)) if log_file
                  else pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        self.client = pulsar.Client(service_url, operation_timeout_seconds=60, logger=logger)
        self.rates = dict(rates)
        self._stop = threading.Event()
        self._threads: list = []
        self.sent: dict = {t: 0 for t in rates}
        self.errors = 0

    def open(self, topic: str, attempts: int = 3):
        """A producer on ``topic``. A creation that times out is tried again (``attempts`` in all): a
        broker on a CPU quota under load can take longer than the operation timeout to load a new
        topic, and it goes on loading it, so the next attempt finds it loaded."""
        for attempt in range(1, attempts + 1):
            try:
                # no batching: one entry per message, so a broker's CPU follows its message rate
                return self.client.create_producer(topic, block_if_queue_full=True, batching_enabled=False,
                                                   max_pending_messages=2000, send_timeout_millis=60000)
            except self._pulsar.Timeout:
                if attempt == attempts:
                    raise

    def _run(self, topic: str, rate: float, producer) -> None:
        period = 0.1  # send rate/10 messages every 100 ms
        per_tick = max(1, int(round(rate * period)))
        nxt = time.monotonic()

        ok = self._pulsar.Result.Ok

        def done(res, _msg_id):
            if res != ok:
                self.errors += 1

        while not self._stop.is_set():
            for _ in range(per_tick):
                try:
                    producer.send_async(PAYLOAD, done)
                except Exception:  # the bundle is moving: the client reconnects by itself
                    self.errors += 1
                    break
            self.sent[topic] += per_tick
            nxt += period
            delay = nxt - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                nxt = time.monotonic()
        try:
            producer.flush()
            producer.close()
        except Exception:
            pass

    def start(self, topics=None) -> None:
        for t in (topics or list(self.rates)):
            p = self.open(t)
            th = threading.Thread(target=self._run, args=(t, self.rates[t], p), daemon=True, name=f"traffic {t}")
            th.start()
            self._threads.append(th)

    def stop(self) -> None:
        self._stop.set()
        for th in self._threads:
            th.join(timeout=30)
        try:
            self.client.close()
        except Exception:
            pass

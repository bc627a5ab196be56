"""Background-callback functions for the job tests: a module of its own with no imports of weight, so
a job process (started by the fork server) imports it at once."""
import time


def echo(value):
    """A short job: its result is its argument."""
    time.sleep(0.05)
    return {"v": value}

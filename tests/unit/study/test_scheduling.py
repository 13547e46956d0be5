import threading
import time

from driver.study import scheduling


class FakeScheduler:
    """What the patched method touches of Snakemake's JobScheduler."""

    def __init__(self):
        self._open_jobs = threading.Semaphore(0)

    def _schedule_reevalutation(self, delay):
        threading.Timer(delay, self._open_jobs.release).start()


def wakes(scheduler, within_s):
    count, deadline = 0, time.monotonic() + within_s
    while scheduler._open_jobs.acquire(timeout=max(deadline - time.monotonic(), 0)):
        count += 1
    return count


def test_one_pending_timer_wakes_the_loop_once():
    class Scheduler(FakeScheduler):
        pass

    assert scheduling.quiet_reevaluation(Scheduler)
    s = Scheduler()
    for _ in range(5):
        s._schedule_reevalutation(0.05)
    assert wakes(s, 0.3) == 1
    s._schedule_reevalutation(0.05)
    assert wakes(s, 0.3) == 1


def test_unpatched_every_pass_adds_a_timer():
    s = FakeScheduler()
    for _ in range(5):
        s._schedule_reevalutation(0.05)
    assert wakes(s, 0.3) == 5


def test_another_snakemake_is_left_alone():
    class Other:
        pass

    assert not scheduling.quiet_reevaluation(Other)
    assert not hasattr(Other, "_schedule_reevalutation")


def test_the_pinned_snakemake_has_the_method():
    from snakemake.scheduling.job_scheduler import JobScheduler

    assert hasattr(JobScheduler, scheduling.SNAKEMAKE_METHOD)

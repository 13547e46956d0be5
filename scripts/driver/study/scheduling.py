"""Snakemake's scheduler, kept quiet while timing jobs run (issue 53 item 4).

With a job rate limit (`max-jobs-per-timespan`, always set: its default is 100/1s), Snakemake's
scheduling loop (snakemake/scheduling/job_scheduler.py, `JobScheduler.schedule`, 9.27.1) ends every
pass that saw a ready job by starting a new `threading.Timer(timespan)` that wakes the loop for
another pass. A pass woken by that timer starts a timer again, so each timer is a chain that lives
as long as some job is ready; and every pass woken by a job's end starts one chain more. While
timing jobs wait for the one timing slot there is always a ready job, so after k jobs have ended
the loop makes about k / timespan passes a second, each over every ready job (the greedy
selector, the inputs' sizes, a new thread). Snakemake's own CPU grows through the study: what the
duets' meters flagged after the checkpoint `plan_duets`, which is only where the study is late
enough (the quiet-orchestrator run note in docs/runs/ has the profile).

`quiet_reevaluation` keeps one such timer at a time: a pass starts one only when none is pending.
Jobs still start the moment a job ends; a pass that found the rate limit reached is followed by
another within one or two timespans (the limit never binds under our profiles); Snakemake still
waits for at most one timespan at exit (tests/e2e/test_profile_exit.py).
"""
import threading

from snakemake.scheduling import job_scheduler

# The Snakemake whose loop this was read from (requirements.txt pins it); another one is left alone
# and tests/e2e/test_quiet_orchestrator.py says whether it still needs this.
SNAKEMAKE_METHOD = "_schedule_reevalutation"


def _one_pending_timer(self, delay):
    with self._quiet_lock:
        if self._quiet_pending:
            return
        self._quiet_pending = True

    def wake():
        with self._quiet_lock:
            self._quiet_pending = False
        self._open_jobs.release()

    timer = threading.Timer(delay, wake)
    timer.start()


def quiet_reevaluation(scheduler_class=job_scheduler.JobScheduler):
    """Make Snakemake's scheduler keep at most one re-evaluation timer; True if it did."""
    if not hasattr(scheduler_class, SNAKEMAKE_METHOD):
        return False
    scheduler_class._quiet_lock = threading.Lock()
    scheduler_class._quiet_pending = False
    setattr(scheduler_class, SNAKEMAKE_METHOD, _one_pending_timer)
    return True

"""The first thing a rule script does: its stderr and the tfspeed loggers go to the rule's log."""
import logging
import sys


def to_rule_log(smk) -> None:
    sys.stderr = open(smk.log[0], "w", buffering=1)  # noqa: SIM115 - open for the script's life
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger = logging.getLogger("tfspeed")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

"""A scheduler plug-in: widest jobs first, each packed onto the tightest node that fits.

    python -m engine compare --plugin examples/widest_first.py --schedulers widest-first,first-fit \
        --cluster 4x8:A100-80 --trace sample_traces/canonical.csv
"""

from engine.schedulers import ListScheduler, SchedulerSpec, StaticKeyOrder, best_fit, register


def widest_first() -> ListScheduler:
    """A fresh scheduler (the engine builds one per run): the most GPUs first, ties in arrival order."""
    return ListScheduler("widest-first", StaticKeyOrder(key=lambda job: -job.gpus), best_fit)


register(
    SchedulerSpec(
        "widest-first",
        widest_first,
        "Tries the jobs that need the most GPUs first and packs each onto the node with the least room left. "
        "Wide jobs stop waiting behind a stream of small ones; small jobs fill the gaps.",
    )
)

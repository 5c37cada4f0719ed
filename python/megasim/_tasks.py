"""Running independent tasks on any concurrent.futures executor (a process pool,
dask.distributed's `Client.get_executor()`, megasim.RayExecutor), as the studies that megasim.sweep
and megasim.campaign spread do: results in the tasks' order, the first failure raised."""
import concurrent.futures
import os


def first_failure(futures):
    """Waits until every future of {key: future} is done or one has failed; returns the failed future
    first by key, or None."""
    concurrent.futures.wait(futures.values(), return_when=concurrent.futures.FIRST_EXCEPTION)
    for key in sorted(futures):
        f = futures[key]
        if f.done() and not f.cancelled() and f.exception() is not None:
            return f
    return None


def map_tasks(executor, task, arguments, submit_order=None):
    """[task(*arguments[i]) for each i] run on the executor, submitted in `submit_order` (a list of
    the indices; default: in order). A failure stops the map: the tasks not yet started are cancelled
    and the first failure by index is raised, as the C++ studies rethrow the first by index."""
    order = range(len(arguments)) if submit_order is None else submit_order
    futures = {}
    try:
        for i in order:
            futures[i] = executor.submit(task, *arguments[i])
        failed = first_failure(futures)
        if failed is not None:
            failed.result()  # raises its exception
        return [futures[i].result() for i in range(len(arguments))]
    except BaseException:
        for f in futures.values():
            f.cancel()
        raise


def cores():
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def workers(executor):
    """Tasks the executor runs at once when it says (a process or thread pool), else this machine's
    cores."""
    n = getattr(executor, "_max_workers", None)
    if isinstance(n, int) and n > 0:
        return n
    return cores()

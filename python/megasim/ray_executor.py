"""megasim.RayExecutor: a concurrent.futures.Executor that runs each task on a Ray cluster, so that
`megasim.sweep(scenario, executor=RayExecutor())` spreads a large study over the cluster's nodes.

Ray has no Executor of its own (ray-project/ray#29456 is open; Ray 2.60 has none), only
`ObjectRef.future()`, a concurrent.futures.Future that its cancel() does not reach. This adapter
submits `fn(*args, **kwargs)` as one Ray task and returns a Future completed from the task's
ObjectRef: the task's value, or its exception (Ray raises a task's error as an instance of the
original exception's class, so `except RuntimeError` still catches a RuntimeError raised in a worker).

The executor uses the Ray cluster this process is connected to: call `ray.init()` (a local cluster)
or `ray.init(address="auto")` (a running one) first; without it, Ray starts a local cluster on the
first submit. shutdown() never stops that cluster (ray.shutdown() is the caller's). The nodes need
megasim installed (the tasks import it), as with any executor that runs elsewhere.
"""
import concurrent.futures
import functools
import threading


def _call(fn, args, kwargs):
    """The Ray task: `fn(*args, **kwargs)` in a worker."""
    return fn(*args, **kwargs)


def _settle(future, ray_future):
    """Completes `future` from `ray_future` (ObjectRef.future() of its task), unless it was cancelled."""
    if not future.set_running_or_notify_cancel():
        return
    error = ray_future.exception()
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(ray_future.result())


class _RayFuture(concurrent.futures.Future):
    """The Future of one Ray task (`object_ref`). Until its result has arrived it reads as pending
    (running() is False: Ray does not tell the caller when a task starts) and cancel() succeeds;
    cancelling also asks Ray to cancel the task: a queued task never runs, a running one gets
    KeyboardInterrupt once it is back in Python (ray.cancel: a simulation in C++ finishes first)."""

    def __init__(self, ray, object_ref):
        super().__init__()
        self._ray = ray
        self.object_ref = object_ref

    def cancel(self):
        if not super().cancel():
            return False
        try:
            self._ray.cancel(self.object_ref)
        except self._ray.exceptions.RayError:
            pass  # the cluster is gone: nothing left to cancel
        return True


class RayExecutor(concurrent.futures.Executor):
    """A concurrent.futures.Executor over Ray: submit(fn, *args, **kwargs) runs one Ray task.

    options: Ray's options for every task (`ray.remote(**options)`), e.g. num_cpus=1 (Ray's default)
    or max_retries=3; fn and its arguments are serialised by Ray (cloudpickle), as a process pool
    pickles them. Futures work with concurrent.futures.wait and as_completed. shutdown(wait=True)
    waits for the tasks submitted; shutdown(cancel_futures=True) cancels those not done. Raises
    ImportError when Ray is not installed (pip install ray)."""

    def __init__(self, **options):
        try:
            import ray
        except ImportError as e:
            raise ImportError("megasim.RayExecutor needs Ray: pip install ray") from e
        self._ray = ray
        self._task = ray.remote(**options)(_call) if options else ray.remote(_call)
        # _lock orders submit against shutdown; _pending_lock guards the futures not done, which Ray's
        # callback thread also takes (_forget), so it must never wait on _lock: a submission may need
        # that thread.
        self._lock = threading.Lock()
        self._pending_lock = threading.Lock()
        self._pending = set()
        self._shutdown = False

    def submit(self, fn, /, *args, **kwargs):
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            # Named after fn, so that Ray's dashboard and errors say evaluate_candidate, not _call.
            task = self._task.options(name=getattr(fn, "__qualname__", "task"))
            future = _RayFuture(self._ray, task.remote(fn, args, kwargs))
            with self._pending_lock:
                self._pending.add(future)
        future.add_done_callback(self._forget)
        future.object_ref.future().add_done_callback(functools.partial(_settle, future))
        return future

    def _forget(self, future):
        with self._pending_lock:
            self._pending.discard(future)

    def shutdown(self, wait=True, *, cancel_futures=False):
        with self._lock:
            self._shutdown = True
        with self._pending_lock:
            pending = list(self._pending)
        # Outside the locks: a cancelled future runs its callbacks (_forget) at once.
        if cancel_futures:
            for future in pending:
                future.cancel()
        if wait:
            concurrent.futures.wait(pending)

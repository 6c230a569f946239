"""Voila server hooks that keep the app's kernels bounded: one kernel per open page, no more.

Voila starts one kernel (about 180 MB with the app's first tab built) per page load. These
make sure they do not pile up; ``notebooks/voila.json`` switches them on:

* **Closing a page frees its kernel.** Voila's page sends a ``beforeunload`` beacon to
  ``/voila/api/shutdown/<kernel>`` carrying the ``_xsrf`` cookie, but Voila 0.5 never sets
  that cookie (its page handler renders through nbconvert, not the Jupyter template that
  would), so the server refused every shutdown with 403 "'_xsrf' argument missing".
  :class:`AppIdentityProvider` sets the cookie on the page request, before the first byte
  of the page is sent, so the beacon passes Tornado's XSRF check.
* **Abandoned kernels are culled** by Jupyter Server's ``MappingKernelManager`` culler
  (``cull_idle_timeout``, ``cull_interval``; ``cull_connected`` off so an open page is never
  culled). A kernel no page has connected to yet (a page still loading, or a bare GET) is kept
  for ``connect_grace_s`` after it was handed out, then culled like any other. The server pings
  each page's websocket every 15 s and drops it after 45 s without an answer, so a page that
  vanished without closing (a crashed browser, a lost network) loses its kernel within about
  two minutes (45 s + the 60 s idle timeout + one 20 s culler pass at most). A ping timeout
  equal to the interval (tried first) dropped live pages of a busy server whenever one ping
  timer fired late.
* **Kernels start a few at a time.** Every page takes a preheated kernel from Voila's pool
  and its taking starts the next one, so twenty pages at once start twenty kernels, each
  running the whole notebook; on two cores none then became ready within a minute and a half
  (the connect grace: the culler took kernels of pages still loading). At most
  ``max_starting`` kernels start and run the notebook at once; the others wait in a queue
  (first come, first served) and the connect grace counts from when a kernel has run the
  notebook, not from when it was asked for.
* **Closed sessions give their memory back.** After kernel shutdowns settle, the server
  collects their objects and returns the freed heap to the system (:meth:`reclaim_memory`),
  so its own memory comes back to its baseline after any number of visits.
* **A kernel nobody waits for starts in the background.** A pool refill starts a kernel and
  runs the notebook in it (about 3 s of a core) while the page that took the previous kernel is
  still loading; at the same priority the two shared the cores and the page took about 1 s
  longer. A refill's kernel starts ``preheat_niceness`` steps nicer (lower priority) and is
  given the server's own priority back the moment a page takes it (:meth:`restore_priority`),
  whether or not it has finished the notebook by then. Where the system does not allow the
  server to raise a priority again (no root, ``RLIMIT_NICE`` too low) kernels start at the
  server's priority, as before.
* **A refill waits while a page loads.** A page's front end (Voila's JupyterLab application:
  about 90 scripts, 5 MB) is served by this server and run by the browser on the same cores
  where the refill's kernel starts and runs the notebook and where this server relays that
  run; side by side the page's scripts took about 1.7 times as long. While the pool still holds
  a ready kernel for the next page, a refill waits ``refill_defer_s`` before it starts
  (:meth:`defer_refill`); a page about to take a waiting refill, or a pool left with no ready
  kernel, starts it at once (a third visitor right behind two others waits for a refill that
  started a few seconds later: the price of the faster single page).
* **A cap on kernels.** :class:`CappedKernelManager` refuses to start kernel number
  ``max_kernels + 1`` (the preheated pool included); a page asked for beyond it gets a short
  "workbook is full" page (HTTP 503) instead of a kernel. The pool's refill waits for room
  rather than failing.

These classes run in the Voila server, not in the kernel; nothing here imports widgets.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
import gc
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jupyter_server.auth.identity import User
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from jupyter_server.utils import ensure_async
from tornado import web
from traitlets import Float, Integer
from voila.handler import VoilaHandler
from voila.voila_identity_provider import VoilaIdentityProvider


def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (it has ``malloc_trim``), else None."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


_LIBC = _glibc()

#: The app's Voila page template ("gpucluster": Voila's lab template without the two Font Awesome
#: stylesheets it links from a CDN), in the Jupyter data layout ``voila/templates/<name>``.
TEMPLATE_ROOT = Path(__file__).with_name("jupyter")


def add_template_path(environ: dict[str, str] = os.environ) -> None:  # noqa: B006 (the process environment)
    """Put :data:`TEMPLATE_ROOT` on ``JUPYTER_PATH``, where Voila looks for templates
    (``voila.paths.collect_template_paths`` through ``jupyter_core.paths.jupyter_path``). Voila
    imports this module while it loads notebooks/voila.json (the classes it names), before it
    resolves ``VoilaConfiguration.template``, so the template is found however the package was
    installed (editable, wheel, conda)."""
    parts = [p for p in environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    if str(TEMPLATE_ROOT) not in parts:
        environ["JUPYTER_PATH"] = os.pathsep.join([*parts, str(TEMPLATE_ROOT)])


add_template_path()


def utcnow() -> datetime:
    """Now, timezone-aware: what Jupyter Server stamps ``last_activity`` with."""
    return datetime.now(UTC)


FULL_REASON = ("The workbook is full: all {n} sessions are in use. Close another tab of the workbook, "
               "or try again in two minutes: a closed or abandoned page frees its session by then.")


def pooled_kernel_ids(km: Any) -> set[str]:
    """Ids of the preheated kernels waiting in Voila's pool (started and not yet handed out)."""
    out = set()
    for pool in getattr(km, "_pools", {}).values():
        for task in pool:
            if task.done() and not task.cancelled() and task.exception() is None:
                out.add(task.result()["kernel_id"])
    return out


def kernel_pids(server_pid: int) -> list[int]:
    """The ipykernel processes the Voila server ``server_pid`` started (from /proc: Voila serves no
    kernel list). Used by the load benchmark and the browser tests to count sessions."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (p / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == server_pid and b"ipykernel" in cmd:
            out.append(int(p.name))
    return out


def rss_mb(pids: list[int]) -> float:
    """Resident memory of the processes ``pids`` together [MB = 10^6 bytes] (``VmRSS`` in /proc)."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total / 1e6


def _admitted(initialize: Callable) -> Callable:
    """Voila's pool fill (``VoilaKernelManager._initialize``: start a kernel, then run the notebook
    in it as a task) behind the manager's admission queue. The slot is given back, and the kernel
    stamped as active, once the notebook has run: when the page's content generator is spent
    (the task hands it to the page's request if one takes the kernel before it is done), or after
    ``VoilaExecutor`` time at most, should nobody ever read it to the end."""

    @functools.wraps(initialize)
    async def _initialize(self: CappedKernelManager, notebook_path: str, kernel_id: str | None = None,
                          **kwargs: Any) -> dict:
        if kernel_id is not None:  # a restart re-runs the notebook in a kernel that exists
            return await initialize(self, notebook_path, kernel_id, **kwargs)
        await self.defer_refill()
        self._queued += 1
        try:
            await self._admission.acquire()
        finally:
            self._queued -= 1
        released = False
        kid: str | None = None
        timer: asyncio.TimerHandle | None = None

        def ready() -> None:  # holds the kernel's id only: the page's renderer must not outlive it
            nonlocal released
            if released:
                return
            released = True
            if timer is not None:
                timer.cancel()  # drops the loop's reference to this function
            self._admission.release()
            if kid is not None and kid in self:  # the connect grace counts from here
                self.get_kernel(kid).last_activity = utcnow()
                self.log.info("Kernel %s has run the notebook (%d waiting to start)", kid, self._queued)

        try:
            content = await initialize(self, notebook_path, kernel_id, **kwargs)
        except BaseException:
            ready()
            raise
        kid = content["kernel_id"]
        # the render task has been created but has not run yet: it calls this on its first step
        renderer = content["renderer"]
        generate = renderer.generate_content_generator

        async def generate_then_release(*args: Any, **kw: Any) -> Any:
            try:
                async for item in generate(*args, **kw):
                    yield item
            finally:
                ready()

        renderer.generate_content_generator = generate_then_release
        timer = asyncio.get_running_loop().call_later(self.start_timeout_s, ready)
        return content

    return _initialize


def _never_empty(get_pool_size: Callable) -> Callable:
    """Voila's pool size, as its page handler asks for it just before taking a pool kernel, with
    a pool fill queued first when the pool is empty. Voila refills the pool only once the kernel
    a page took has started, so pages arriving meanwhile found it empty and started kernels of
    their own outside the pool, all at once: with this every page takes a pool kernel, and
    every kernel start goes through the admission queue."""

    @functools.wraps(get_pool_size)
    def _get_pool_size(self: CappedKernelManager, notebook_name: str) -> int:
        size = get_pool_size(self, notebook_name)
        if size == 0:
            self.fill_if_needed(delay=0, notebook_name=notebook_name)  # adds none if the pool is off
            size = get_pool_size(self, notebook_name)
        return size

    return _get_pool_size


def _pool_tasks(km: Any) -> set[asyncio.Task]:
    """Every task in Voila's pools (kernels ready, starting, or refills waiting to start)."""
    return {task for pool in getattr(km, "_pools", {}).values() for task in pool}


def _restoring_priority(get_rendered_notebook: Callable) -> Callable:
    """Voila's hand-out of a pool kernel to a page, then that kernel's priority back to normal.
    A refill the page is about to take, or every waiting refill once no kernel is ready, starts
    now (:meth:`CappedKernelManager.defer_refill`)."""

    @functools.wraps(get_rendered_notebook)
    async def _get_rendered_notebook(self: CappedKernelManager, *args: Any, **kwargs: Any) -> Any:
        name = kwargs.get("notebook_name", args[0] if args else None)
        pool = getattr(self, "_pools", {}).get(name) or []
        if pool:  # the pool item the page takes (Voila pops the first): nobody waits for a deferred one
            self.start_deferred(pool[0])
            if not pool[0].done():  # a page waits for it: it gets room before refills nobody waits for
                self._wanted.add(pool[0])
        before = _pool_tasks(self)
        out = await get_rendered_notebook(self, *args, **kwargs)
        self._refills |= _pool_tasks(self) - before  # the refills of this hand-out (none has run yet)
        self.restore_priority(out[2])  # (render task, rendered cells, kernel id)
        if not pooled_kernel_ids(self):  # the next page would wait: every refill starts now
            self.start_deferred()
        return out

    return _get_rendered_notebook


def can_restore_priority() -> bool:
    """Whether this process may set a child's niceness back down to its own (Linux: root, or an
    ``RLIMIT_NICE`` soft limit of at least ``20 - nice``; setpriority(2))."""
    if not hasattr(os, "setpriority"):
        return False
    if os.geteuid() == 0:
        return True
    import resource

    own = os.getpriority(os.PRIO_PROCESS, 0)
    soft = resource.getrlimit(resource.RLIMIT_NICE)[0]
    return soft == resource.RLIM_INFINITY or 20 - own <= soft


def set_priority(pid: int, niceness: int) -> bool:
    """Set the niceness of every thread of process ``pid`` (Linux's setpriority acts on one thread;
    a kernel's threads were all made after it started nicer). False if the process is gone."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tids = [pid]
    done = False
    for tid in tids:
        try:
            os.setpriority(os.PRIO_PROCESS, tid, niceness)
            done = True
        except (ProcessLookupError, PermissionError):
            continue
    return done


class CappedKernelManager(AsyncMappingKernelManager):
    """Jupyter Server's kernel manager with a hard cap on live kernels (pool included) and an
    admission queue for kernel starts.

    Voila makes its pooling manager by subclassing the configured class
    (``voila_kernel_manager_factory``); :meth:`__init_subclass__` puts that subclass's pool fill
    behind the queue.
    """

    max_kernels = Integer(24, config=True, help=(
        "Most kernels alive at once, the preheated pool included. A page beyond it is refused with a "
        "'workbook is full' page. Each app kernel holds about 260 MB."))
    connect_grace_s = Float(90.0, config=True, help=(
        "A kernel handed to a page that has not connected yet is kept this long [s] (a page can take a "
        "minute to load on a busy server) before the idle culler may take it: the bound for a bare GET."))
    pool_wait_s = Float(1.0, config=True, help="How often a pool refill waiting for room checks again [s].")
    max_starting = Integer(2, config=True, help=(
        "Most kernels starting and running the notebook at once; later ones wait their turn. About one "
        "per CPU core: more only makes each of them slower."))
    reclaim_delay_s = Float(2.0, config=True, help=(
        "Memory of closed sessions is given back this long [s] after the last kernel shutdown."))
    start_timeout_s = Float(300.0, config=True, help=(
        "A kernel's admission slot is given back after this long [s] even if its notebook has not "
        "finished running (as VoilaExecutor.timeout bounds each cell)."))

    preheat_niceness = Integer(10, config=True, help=(
        "How much nicer (lower priority, 0-19) a pool refill's kernel starts and runs the notebook, "
        "so that it does not slow the page that is loading meanwhile; a page that takes it gives "
        "it the server's priority back. 0: refills start at the server's priority."))

    refill_defer_s = Float(10.0, config=True, help=(
        "A pool refill waits this long [s] before it starts its kernel while the pool still holds a "
        "ready kernel for the next page, so that the page which took a kernel loads without the "
        "refill's kernel start and notebook run beside it on the same cores. It starts at once when "
        "a page is about to take it or no ready kernel is left. 0: refills start at once."))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_initialize" in cls.__dict__:
            cls._initialize = _admitted(cls.__dict__["_initialize"])
        if "get_pool_size" in cls.__dict__:
            cls.get_pool_size = _never_empty(cls.__dict__["get_pool_size"])
        if "get_rendered_notebook" in cls.__dict__:
            cls.get_rendered_notebook = _restoring_priority(cls.__dict__["get_rendered_notebook"])

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._starting = 0
        self._queued = 0  # pool fills waiting for an admission slot
        self._admission = asyncio.Semaphore(max(1, self.max_starting))
        self._connected: set[str] = set()  # kernels a page has connected to at least once
        self._reclaim: asyncio.TimerHandle | None = None
        self._niceness = os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, "getpriority") else 0
        self._nice_start = self.preheat_niceness if self.preheat_niceness > 0 and can_restore_priority() else 0
        self._deferred: dict[asyncio.Task, asyncio.Event] = {}  # refills waiting to start, by pool task
        self._refills: set[asyncio.Task] = set()  # pool tasks a hand-out asked for, not yet run
        self._held = 0  # refills waiting in defer_refill
        self._wanted: set[asyncio.Task] = set()  # pool fills a page has taken before their kernel started
        self._waiting_room: list[asyncio.Task | None] = []  # refills waiting for room under the cap, in order

    async def defer_refill(self) -> None:
        """Wait before the refill a page's hand-out asked for starts its kernel: up to
        ``refill_defer_s`` while a ready kernel is in the pool (the page that took one is
        loading), or until :meth:`start_deferred` is called for it. At once when no kernel is
        ready (a drained pool: a page would wait for this one) and for the server's first fill."""
        task = asyncio.current_task()
        if task not in self._refills:  # not the refill of a hand-out: the server's first fill
            return
        self._refills.discard(task)
        if self.refill_defer_s <= 0 or not pooled_kernel_ids(self):
            return
        gate = self._deferred[task] = asyncio.Event()
        self._held += 1  # it keeps its room under the cap while it waits, as a starting kernel would
        try:
            await asyncio.wait_for(gate.wait(), self.refill_defer_s)
        except TimeoutError:
            pass
        finally:
            self._deferred.pop(task, None)
            self._held -= 1  # the caller counts it as queued in the same step

    def start_deferred(self, task: asyncio.Task | None = None) -> None:
        """Start the deferred refill of pool item ``task`` now (every deferred refill: None), also
        one that has not yet begun to wait."""
        if task is None:
            self._refills.clear()
        else:
            self._refills.discard(task)
        for waiting, gate in list(self._deferred.items()):
            if task is None or waiting is task:
                gate.set()

    def kernel_pid(self, kernel_id: str) -> int | None:
        """The process id of kernel ``kernel_id`` (a local kernel), or None."""
        if kernel_id not in self:
            return None
        return getattr(getattr(self.get_kernel(kernel_id), "provisioner", None), "pid", None)

    def restore_priority(self, kernel_id: str) -> None:
        """Give kernel ``kernel_id`` the server's own priority (a page has taken it)."""
        pid = self.kernel_pid(kernel_id)
        if self._nice_start and pid is not None and set_priority(pid, self._niceness):
            self.log.debug("Kernel %s back to the server's priority", kernel_id)

    def notify_connect(self, kernel_id: str) -> None:
        self._connected.add(kernel_id)
        super().notify_connect(kernel_id)

    async def cull_kernel_if_idle(self, kernel_id: str) -> None:
        """The idle culler, except for a kernel whose page is still loading (never connected, handed
        out or started less than ``connect_grace_s`` ago)."""
        if kernel_id not in self._connected and kernel_id in self:
            last = getattr(self.get_kernel(kernel_id), "last_activity", None)
            if last is not None and (utcnow() - last).total_seconds() < self.connect_grace_s:
                return
        await ensure_async(super().cull_kernel_if_idle(kernel_id))

    async def shutdown_kernel(self, kernel_id: str, *args: Any, **kwargs: Any) -> None:
        self._connected.discard(kernel_id)
        await ensure_async(super().shutdown_kernel(kernel_id, *args, **kwargs))
        self._schedule_reclaim()

    def _schedule_reclaim(self) -> None:
        """Give the memory of closed sessions back to the system once the shutdowns settle."""
        if self._reclaim is not None:
            self._reclaim.cancel()
        self._reclaim = asyncio.get_running_loop().call_later(self.reclaim_delay_s, self.reclaim_memory)

    def reclaim_memory(self) -> None:
        """Collect the closed sessions' objects (their pages' widget state and rendered notebook,
        about 2 MB each) and return the freed heap to the system (glibc's ``malloc_trim``).
        Without it the server's resident memory grew by about 4 MB per visit, as glibc kept the
        freed pages, and a long-running server never came back to its baseline."""
        self._reclaim = None
        gc.collect()
        if _LIBC is not None:
            _LIBC.malloc_trim(0)

    def kernel_count(self) -> int:
        """Kernels alive, starting, waiting for their turn to start, or refills waiting to start."""
        return len(self._kernels) + self._starting + self._queued + self._held

    def has_room(self, reserve: int = 0) -> bool:
        """Whether one more kernel fits under the cap, ``reserve`` more kept free for others."""
        return self.kernel_count() + reserve < self.max_kernels

    def _wanted_waiting(self, task: asyncio.Task | None) -> int:
        """Pool fills a page waits for that have not started their kernel (room kept for them)."""
        self._wanted = {t for t in self._wanted if not t.done()}
        return len(self._wanted - {task})

    def can_serve_page(self) -> bool:
        """Whether a new page gets a kernel: a preheated one is ready, the pool holds one on its way
        (a refill waiting to start, queued or starting: the page takes it), or there is room for one.
        A pool refill waiting for room does not count: the page would wait for another to close."""
        on_its_way = any(not t.done() and t not in self._waiting_room for t in _pool_tasks(self))
        return bool(pooled_kernel_ids(self)) or on_its_way or self.has_room()

    async def start_kernel(self, *args: Any, **kwargs: Any) -> str:
        refill = (kwargs.get("env") or {}).get("VOILA_PREHEAT") == "True"
        task = asyncio.current_task()
        try:  # a start a page waits for goes first; other refills get room first come, first served
            while not self.has_room(0 if task in self._wanted else self._wanted_waiting(task)) or (
                    refill and task not in self._wanted and self._waiting_room and self._waiting_room[0] is not task):
                if not refill:
                    raise web.HTTPError(503, reason=FULL_REASON.format(n=self.max_kernels))
                if task not in self._waiting_room:
                    self._waiting_room.append(task)
                await asyncio.sleep(self.pool_wait_s)  # the pool refills once a page's kernel is gone
        finally:
            if task in self._waiting_room:
                self._waiting_room.remove(task)
            self._wanted.discard(task)
        if refill and self._nice_start:  # made nicer in the child, between fork and exec
            kwargs["preexec_fn"] = functools.partial(os.nice, self._nice_start)
        self._starting += 1
        try:
            return await ensure_async(super().start_kernel(*args, **kwargs))
        finally:
            self._starting -= 1


class AppIdentityProvider(VoilaIdentityProvider):
    """Voila's identity provider, plus what the app's page request needs before it is served.

    On ``GET`` of the app page: set the ``_xsrf`` cookie (for the page-close shutdown beacon),
    refuse the page when no kernel can be had (503), and stamp the preheated kernels as active
    (the page about to take one must not be culled while it loads).
    """

    async def _get_user(self, handler: web.RequestHandler) -> User | None:
        user = await super()._get_user(handler)
        if isinstance(handler, VoilaHandler) and handler.request.method == "GET":
            # what JupyterHandler.prepare sets after this returns; the cookie and the error page read it
            handler.current_user = handler._jupyter_current_user = user
            handler.xsrf_token  # noqa: B018 - the property sets the _xsrf cookie
            km = handler.settings.get("kernel_manager")
            if isinstance(km, CappedKernelManager):
                if not km.can_serve_page():
                    raise web.HTTPError(503, reason=FULL_REASON.format(n=km.max_kernels))
                now = utcnow()
                for kid in pooled_kernel_ids(km):
                    if kid in km:
                        km.get_kernel(kid).last_activity = now
        return user

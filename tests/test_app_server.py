"""The Voila kernel manager's admission queue and never-empty pool, without a server: a stand-in
for Voila's pooling subclass (``voila_kernel_manager_factory`` subclasses the configured class
the same way) whose pool fills take a kernel start and a notebook run the test controls.
tests/browser/test_app_sessions.py checks the same with the real server and browser."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from datetime import timedelta
from types import SimpleNamespace

from gpucluster_lib.ui.server import CappedKernelManager, kernel_pids, rss_mb, utcnow


def run_alone(coro) -> None:
    """``asyncio.run`` in a thread of its own: the browser tests' Playwright session keeps an
    event loop running in the main thread for the whole test session, where asyncio.run refuses."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coro).result()


class Renderer:
    """Voila's NotebookRenderer as the pool fill uses it: a content generator that runs the notebook."""

    def __init__(self, test: PoolStandIn, kid: str) -> None:
        self.test, self.kid = test, kid

    async def generate_content_generator(self, kernel_id=None, kernel_future=None):
        self.test.running.add(self.kid)
        self.test.peak = max(self.test.peak, len(self.test.running))
        yield "<head>", None  # the page's first bytes, before the cells run
        await self.test.notebook_done[self.kid].wait()
        self.test.running.discard(self.kid)
        yield "<body>", None


class PoolStandIn(CappedKernelManager):
    """Defines the two methods Voila's subclass defines, so ``__init_subclass__`` wraps them."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.running: set[str] = set()
        self.peak = 0
        self.notebook_done: dict[str, asyncio.Event] = {}
        self.fake_kernels: dict[str, SimpleNamespace] = {}
        self.pool: list[asyncio.Task] = []

    async def _initialize(self, notebook_path, kernel_id=None, **kwargs):
        kid = f"k{len(self.fake_kernels)}"
        self.fake_kernels[kid] = SimpleNamespace(last_activity=utcnow() - timedelta(hours=1))
        self.notebook_done[kid] = asyncio.Event()
        renderer = Renderer(self, kid)

        async def render():  # generate_content_hybrid: reads the generator to its end
            async for _ in renderer.generate_content_generator(kid):
                pass

        return {"kernel_id": kid, "renderer": renderer, "task": asyncio.get_running_loop().create_task(render())}

    def get_pool_size(self, notebook_name):
        return len(self.pool)

    def fill_if_needed(self, delay=None, notebook_name=None, **kwargs):
        self.pool.append(asyncio.get_running_loop().create_task(self._initialize(notebook_name, None)))

    def __contains__(self, kid):
        return kid in self.fake_kernels

    def get_kernel(self, kid):
        return self.fake_kernels[kid]


async def _settle():
    for _ in range(20):
        await asyncio.sleep(0)


def test_kernels_start_and_run_the_notebook_a_few_at_a_time():
    async def scenario():
        km = PoolStandIn(max_starting=2, max_kernels=10)
        fills = [asyncio.create_task(km._initialize("app.ipynb")) for _ in range(5)]
        await _settle()
        assert len(km.fake_kernels) == 2  # five asked for at once: two start, three wait their turn
        assert km._queued == 3 and km.kernel_count() == 3  # (no real kernel is alive here)
        assert km.fake_kernels["k0"].last_activity < utcnow() - timedelta(minutes=59)
        km.notebook_done["k0"].set()  # one kernel has run the notebook: the next may start
        await _settle()
        assert len(km.fake_kernels) == 3 and km._queued == 2
        # the connect grace counts from now, not from when the kernel was asked for
        assert utcnow() - km.fake_kernels["k0"].last_activity < timedelta(seconds=5)
        for kid in ("k1", "k2", "k3", "k4"):
            await _settle()
            km.notebook_done[kid].set()
        await asyncio.gather(*fills)
        await _settle()
        assert km.peak == 2 and len(km.fake_kernels) == 5 and km._queued == 0

    run_alone(scenario())


def test_a_page_taking_a_kernel_mid_run_keeps_its_slot_until_the_notebook_has_run():
    """Voila's page handler stops the pool's render task after the first cell and reads the rest
    of the generator itself: the slot goes with the generator's end, not the task's."""

    async def scenario():
        km = PoolStandIn(max_starting=1)
        content = await km._initialize("app.ipynb")
        content["task"].cancel()  # the task no longer reads it; the page's request does
        await _settle()
        waiting = asyncio.create_task(km._initialize("app.ipynb"))
        await _settle()
        assert len(km.fake_kernels) == 1 and km._queued == 1
        rest = content["renderer"].generate_content_generator("k0")
        km.notebook_done["k0"].set()
        assert [html async for html, _ in rest] == ["<head>", "<body>"]
        await waiting
        assert len(km.fake_kernels) == 2

    run_alone(scenario())


def test_a_page_finding_the_pool_empty_queues_a_pool_fill_for_itself():
    async def scenario():
        km = PoolStandIn()
        assert km.get_pool_size("app.ipynb") == 1  # the handler then takes the pool path
        assert km.get_pool_size("app.ipynb") == 1  # not one more for each question
        await asyncio.gather(*km.pool)

    run_alone(scenario())


def test_kernel_processes_of_a_server_from_proc():
    import os
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "ipykernel_launcher"])
    try:
        assert kernel_pids(os.getpid()) == [child.pid]  # "ipykernel" on its command line
        assert kernel_pids(child.pid) == []
        assert 1 < rss_mb([child.pid]) < 100  # a bare interpreter [MB]
    finally:
        child.kill()
        child.wait()


def test_a_kernel_that_has_run_the_notebook_leaves_nothing_of_its_page_behind():
    """The admission slot's timer must not hold the page's renderer (its executor keeps every
    widget's state, 2 MB with the chart bundle): the server grew by that much per visit."""
    import gc
    import weakref

    async def scenario():
        km = PoolStandIn()
        content = await km._initialize("app.ipynb")
        renderer = weakref.ref(content["renderer"])
        km.notebook_done["k0"].set()
        await content["task"]
        del content
        gc.collect()
        assert renderer() is None

    run_alone(scenario())


def test_memory_is_reclaimed_once_after_a_burst_of_shutdowns(monkeypatch):
    calls = []

    async def scenario():
        km = PoolStandIn(reclaim_delay_s=0.01)
        monkeypatch.setattr(km, "reclaim_memory", lambda: calls.append(1))
        for _ in range(5):  # twenty pages closing together: one collection, not twenty
            km._schedule_reclaim()
        await asyncio.sleep(0.1)

    run_alone(scenario())
    assert calls == [1]
    PoolStandIn().reclaim_memory()  # gc + malloc_trim: runs wherever the C library has no malloc_trim too


def _niceness(pid: int) -> int:
    """The nice value of process ``pid`` (field 19 of /proc/<pid>/stat, proc(5))."""
    return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[16])


class HandOutStandIn(PoolStandIn):
    """Also Voila's hand-out of a pool kernel to a page (``get_rendered_notebook``), over kernels
    that are real processes, started the way jupyter_client starts them (Popen with the kwargs)."""

    async def get_rendered_notebook(self, notebook_name, **kwargs):
        content = await self.pool.pop(0)
        return content["task"], [], content["kernel_id"]

    def fill_if_needed(self, delay=None, notebook_name=None, **kwargs):
        async def fill():  # Voila's pool fill: start a kernel, run the notebook in it
            pid = await self.start_kernel(env={"VOILA_PREHEAT": "True"})  # what Voila's fill passes
            content = await self._initialize(notebook_name, None)
            self.fake_kernels[content["kernel_id"]].provisioner = SimpleNamespace(pid=pid)
            return content

        self.pool.append(asyncio.get_running_loop().create_task(fill()))


def test_a_refill_kernel_starts_nicer_and_gets_the_normal_priority_once_a_page_takes_it(monkeypatch):
    import os
    import subprocess
    import sys

    from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager

    from gpucluster_lib.ui.server import can_restore_priority

    children, asked = [], []

    async def launch(self, *args, env=None, preexec_fn=None, **kwargs):  # jupyter_client's Popen
        asked.append(preexec_fn)
        children.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                                         preexec_fn=preexec_fn))
        return children[-1].pid

    monkeypatch.setattr(AsyncMappingKernelManager, "start_kernel", launch)
    own = os.getpriority(os.PRIO_PROCESS, 0)

    async def scenario():
        km = HandOutStandIn(preheat_niceness=7)
        km.fill_if_needed()
        await asyncio.sleep(0.2)
        pid = children[0].pid
        if not can_restore_priority():  # it could never get its priority back: not made nicer at all
            assert asked == [None] and _niceness(pid) == own
            return
        assert _niceness(pid) == min(own + 7, 19)  # while nobody waits for it
        km.fill_if_needed()  # the page's refill, still nicer
        _task, _cells, kid = await km.get_rendered_notebook("app.ipynb")
        assert kid == "k0" and _niceness(pid) == own  # a page took it
        await asyncio.sleep(0.2)
        assert _niceness(children[1].pid) == min(own + 7, 19)
        for kid in km.notebook_done:
            km.notebook_done[kid].set()

    try:
        run_alone(scenario())
    finally:
        for c in children:
            c.kill()
            c.wait()
    assert len(asked) == len(children) >= 1


def test_no_niceness_setting_starts_refills_at_the_servers_priority(monkeypatch):
    from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager

    asked = []

    async def launch(self, *args, **kwargs):
        asked.append(kwargs.get("preexec_fn"))
        return "kernel-id"

    monkeypatch.setattr(AsyncMappingKernelManager, "start_kernel", launch)

    async def scenario():
        km = CappedKernelManager(preheat_niceness=0)
        await km.start_kernel(env={"VOILA_PREHEAT": "True"})
        km = CappedKernelManager(preheat_niceness=10)
        await km.start_kernel(env={})  # not a pool refill: a page waits for it
        assert km.restore_priority("no-such-kernel") is None  # a kernel already gone: nothing to do

    run_alone(scenario())
    assert asked == [None, None]


class VoilaPoolStandIn(CappedKernelManager):
    """Voila's pool as ``voila_kernel_manager_factory`` keeps it (``_pools``: notebook -> tasks, a page
    takes the first), with kernels that start the moment their fill asks and notebooks that run at once."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._pools: dict[str, list[asyncio.Task]] = {}
        self.started: list[str] = []
        self.fake_kernels: dict[str, SimpleNamespace] = {}

    async def _initialize(self, notebook_path, kernel_id=None, **kwargs):
        kid = f"k{len(self.started)}"
        self.started.append(kid)  # Voila's fill starts the kernel here
        self.fake_kernels[kid] = SimpleNamespace(last_activity=utcnow())

        class Done:
            async def generate_content_generator(self, *args, **kw):
                yield "<body>", None

        renderer = Done()

        async def render():
            async for _ in renderer.generate_content_generator():
                pass

        return {"kernel_id": kid, "renderer": renderer, "task": asyncio.get_running_loop().create_task(render())}

    def fill_if_needed(self, delay=None, notebook_name="app.ipynb", **kwargs):
        pool = self._pools.setdefault(notebook_name, [])
        pool.append(asyncio.get_running_loop().create_task(self._initialize(notebook_name, None)))

    async def get_rendered_notebook(self, notebook_name, **kwargs):
        content = await self._pools[notebook_name].pop(0)
        self.fill_if_needed(notebook_name=notebook_name)  # Voila refills on every hand-out
        return content["task"], [], content["kernel_id"]

    def get_pool_size(self, notebook_name):
        return len(self._pools.get(notebook_name, []))

    def __contains__(self, kid):
        return kid in self.fake_kernels

    def get_kernel(self, kid):
        return self.fake_kernels[kid]


def test_a_refill_waits_while_the_pool_still_has_a_ready_kernel_for_the_next_page():
    async def scenario():
        km = VoilaPoolStandIn(refill_defer_s=0.3)
        km.fill_if_needed()
        km.fill_if_needed()
        await _settle()
        assert km.started == ["k0", "k1"]  # the server's first fill: nobody to wait for
        *_, kid = await km.get_rendered_notebook("app.ipynb")
        await _settle()
        assert kid == "k0" and km.started == ["k0", "k1"]  # k1 is ready: the refill waits
        await asyncio.sleep(0.5)
        assert km.started == ["k0", "k1", "k2"]  # refill_defer_s later it has started
        await asyncio.gather(*km._pools["app.ipynb"])

    run_alone(scenario())


def test_a_pool_left_without_a_ready_kernel_starts_every_waiting_refill_at_once():
    async def scenario():
        km = VoilaPoolStandIn(refill_defer_s=60)
        km.fill_if_needed()
        km.fill_if_needed()
        await _settle()
        await km.get_rendered_notebook("app.ipynb")  # page 1 takes k0; its refill waits (k1 is ready)
        await _settle()
        assert km.started == ["k0", "k1"]
        await km.get_rendered_notebook("app.ipynb")  # page 2 takes k1: the next page would wait
        await _settle()
        assert km.started == ["k0", "k1", "k2", "k3"]  # both refills, not 60 s later
        *_, kid = await asyncio.wait_for(km.get_rendered_notebook("app.ipynb"), 5)
        assert kid in ("k2", "k3")  # page 3 gets one of them at once
        assert len(km._deferred) == 1  # and its own refill waits: the other one is ready
        km.start_deferred()
        await asyncio.gather(*km._pools["app.ipynb"])

    run_alone(scenario())


def test_a_page_about_to_take_a_waiting_refill_starts_it_at_once():
    async def scenario():
        km = VoilaPoolStandIn(refill_defer_s=60)
        km.fill_if_needed()
        km.fill_if_needed()
        await _settle()
        await km.get_rendered_notebook("app.ipynb")  # page 1 takes k0; its refill waits (k1 is ready)
        await _settle()
        assert km.started == ["k0", "k1"]
        km._pools["app.ipynb"].reverse()  # the waiting refill is the pool item the next page takes
        *_, kid = await asyncio.wait_for(km.get_rendered_notebook("app.ipynb"), 5)
        assert kid == "k2"  # started for that page, not 60 s later
        km.start_deferred()
        await asyncio.gather(*km._pools["app.ipynb"])

    run_alone(scenario())


def test_no_refill_deferral_starts_refills_at_once():
    async def scenario():
        km = VoilaPoolStandIn(refill_defer_s=0)
        km.fill_if_needed()
        await _settle()
        await km.get_rendered_notebook("app.ipynb")
        km.fill_if_needed()
        await _settle()
        assert km.started == ["k0", "k1", "k2"]

    run_alone(scenario())


def test_at_the_cap_a_page_is_served_when_the_pool_holds_a_kernel_on_its_way():
    """A refill the pool holds (waiting to start, queued or starting) is the kernel the next page
    takes; one that waits for room under the cap is not: that page gets the "workbook is full" page."""

    async def scenario():
        km = VoilaPoolStandIn(max_kernels=2)
        km._kernels.update(a=None, b=None)  # two kernels alive: the cap
        assert not km.can_serve_page()  # no pool at all
        never = asyncio.get_running_loop().create_future()
        refill = asyncio.get_running_loop().create_task(asyncio.wait_for(never, 60))
        km._pools["app.ipynb"] = [refill]
        assert km.can_serve_page()  # on its way: the page takes it
        km._waiting_room.append(refill)
        assert not km.can_serve_page()  # it waits for a page to close first
        refill.cancel()

    run_alone(scenario())


def test_the_app_template_is_on_the_jupyter_path_wherever_the_package_is():
    """Voila finds templates on the Jupyter data path (voila/paths.py, jupyter_core's jupyter_path);
    the app's template ships inside the package and server.py adds its root once, after what is there."""
    from gpucluster_lib.ui.server import TEMPLATE_ROOT, add_template_path

    assert (TEMPLATE_ROOT / "voila" / "templates" / "gpucluster" / "index.html.j2").is_file()
    env = {"JUPYTER_PATH": os.pathsep.join(["/a", "/b"])}
    add_template_path(env)
    add_template_path(env)
    assert env["JUPYTER_PATH"].split(os.pathsep) == ["/a", "/b", str(TEMPLATE_ROOT)]
    empty: dict[str, str] = {}
    add_template_path(empty)
    assert empty == {"JUPYTER_PATH": str(TEMPLATE_ROOT)}

"""Voila server hooks that keep the app's kernels bounded: one kernel per open page, no more.

Voila starts one kernel (about 260 MB with the app imported) per page load. Three things
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
  for ``connect_grace_s`` after it was handed out, then culled like any other.
* **A cap on kernels.** :class:`CappedKernelManager` refuses to start kernel number
  ``max_kernels + 1`` (the preheated pool included); a page asked for beyond it gets a short
  "workbook is full" page (HTTP 503) instead of a kernel. The pool's refill waits for room
  rather than failing.

These classes run in the Voila server, not in the kernel; nothing here imports widgets.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from jupyter_server.auth.identity import User
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from jupyter_server.utils import ensure_async
from tornado import web
from traitlets import Float, Integer
from voila.handler import VoilaHandler
from voila.voila_identity_provider import VoilaIdentityProvider


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


class CappedKernelManager(AsyncMappingKernelManager):
    """Jupyter Server's kernel manager with a hard cap on live kernels (pool included)."""

    max_kernels = Integer(24, config=True, help=(
        "Most kernels alive at once, the preheated pool included. A page beyond it is refused with a "
        "'workbook is full' page. Each app kernel holds about 260 MB."))
    connect_grace_s = Float(90.0, config=True, help=(
        "A kernel handed to a page that has not connected yet is kept this long [s] (a page can take a "
        "minute to load on a busy server) before the idle culler may take it: the bound for a bare GET."))
    pool_wait_s = Float(1.0, config=True, help="How often a pool refill waiting for room checks again [s].")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._starting = 0
        self._connected: set[str] = set()  # kernels a page has connected to at least once

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

    def kernel_count(self) -> int:
        """Kernels alive or starting."""
        return len(self._kernels) + self._starting

    def has_room(self) -> bool:
        return self.kernel_count() < self.max_kernels

    def can_serve_page(self) -> bool:
        """Whether a new page gets a kernel: a preheated one is ready, or there is room for one."""
        return bool(pooled_kernel_ids(self)) or self.has_room()

    async def start_kernel(self, *args: Any, **kwargs: Any) -> str:
        refill = (kwargs.get("env") or {}).get("VOILA_PREHEAT") == "True"
        while not self.has_room():
            if not refill:
                raise web.HTTPError(503, reason=FULL_REASON.format(n=self.max_kernels))
            await asyncio.sleep(self.pool_wait_s)  # the pool refills once a page's kernel is gone
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

"""The kernel manager a report's notebook kernel runs under.

jupyter_client's ``AsyncKernelManager`` (nbclient's default) interrupts the kernel before every
shutdown (``KernelManager._async_shutdown_kernel`` sends SIGINT, then the shutdown request). A
report's kernel is idle by then: every cell has finished, or a timed-out one was interrupted
already (nbclient's ``interrupt_on_timeout``). When the signal lands while ipykernel still handles
its last message, ipykernel logs "KeyboardInterrupt caught in kernel." at ERROR level on the
command's standard error (``Kernel.dispatch_shell``), a race seen about once in ten runs on a busy
machine. :class:`ReportKernelManager` leaves that one interrupt out and changes nothing else: the
kernel is then killed (:func:`.kernel.execute_notebook` shuts it down "immediate", see there why),
the timeout's interrupt still reaches a running cell, and the kernel's own log keeps its normal
level, so its real warnings and errors still reach the user.

Imported only when a report runs (jupyter_client is a heavy import).
"""

from __future__ import annotations

from jupyter_client.manager import AsyncKernelManager


class ReportKernelManager(AsyncKernelManager):
    """``AsyncKernelManager`` that shuts the kernel down without interrupting it first."""

    async def _async_interrupt_kernel(self) -> None:
        """Interrupt the kernel, except during a shutdown: ``_async_shutdown_kernel`` sets
        ``shutting_down`` just before its interrupt, the one step left out."""
        if self.shutting_down:
            return
        await super()._async_interrupt_kernel()

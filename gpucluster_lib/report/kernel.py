"""Run a report template with papermill, its kernel on local sockets, and export it as HTML.

The report and the sweep report each execute a notebook in a fresh Python kernel. By default
jupyter_client connects to that kernel over TCP on localhost, and ipykernel then logs "Kernel is
running over TCP without encryption" on the command's standard error (ipykernel's
``IPKernelApp.init_sockets``). The kernel only ever talks to this process, so
:func:`execute_notebook` connects over Unix domain sockets (ZeroMQ's ``ipc`` transport) in a
private folder made for the run directly under ``/tmp`` (a socket's path is limited to about
100 bytes, so a long ``TMPDIR`` would not do) and removed afterwards: nothing listens on a network
port, and the kernel has nothing to warn about. The kernel's standard error is left alone, so a
real error still reaches the user. Where Unix sockets are not available (Windows) or no short
folder can be made, the default TCP transport is kept.

A cell that fails, a cell that runs past the timeout and a kernel that dies each end as one
:class:`ReportError` with a one-line message. On a timeout the kernel is interrupted and the
interrupted cell given up to :data:`INTERRUPT_WAIT_S` to stop (nbclient's ``interrupt_on_timeout``).
The kernel's own log keeps its normal level, so its warnings and errors are seen.

When the notebook has run (to its end or to its first error), the kernel is killed, not asked to
shut down (nbclient's ``shutdown_kernel="immediate"``: jupyter_client's ``shutdown_kernel(now=True)``
sends SIGKILL to the kernel's process group, which also ends any process a cell started). By then
nbclient has every reply and output: a cell is done when the kernel reports "idle" after it, and
the executed notebook is written by this process. Asked to shut down, ipykernel 7.4 races with
itself: the shutdown request makes the main thread leave its event loop and exit (its exit handlers
stop the IOPub thread and close every thread's pipe to it) while the control thread still
publishes the request's "idle" status and flushes its output; a publish that passed the IOPub
thread's liveness check before the close sends on a closed pipe, and the ``ZMQError: Socket
operation on non-socket`` is logged with its traceback by tornado on standard error, which the
kernel shares with this command (``IOPubThread.schedule``, ``Kernel.process_control``; ipykernel
github.com/ipython/ipykernel/pull/1518 made the socket send itself quiet, not this pipe). It was seen 2 times in 67
runs of a failing sweep report on a busy machine; holding the control thread for 0.8 s between
that check and its send raises the error in every run (5 of 5). A killed kernel runs none of that
code. The kernel runs under :class:`~.kernel_manager.ReportKernelManager`, which leaves out the
interrupt jupyter_client sends before every shutdown (it could make ipykernel log a stray
"KeyboardInterrupt caught in kernel.").
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from gpucluster_lib.errors import GpuClusterError

# a Unix socket's path holds at most 104 bytes on macOS and 108 on Linux (sockaddr_un.sun_path),
# and jupyter_client appends "-<port>" (up to 6 characters) to the socket's name
MAX_SOCKET_PATH = 104 - 7
#: where the kernel's socket folder is made: short on every POSIX system
SOCKET_ROOT = "/tmp"
#: how long an interrupted cell may take to stop [s] (nbclient's ``iopub_timeout``: after a reply,
#: here the timeout's, the wait for the kernel's "idle"; its default of 4 s is short on a busy machine)
INTERRUPT_WAIT_S = 30
#: the name a timed-out cell's error has in nbclient's execute reply (``error_on_timeout``)
_TIMEOUT_ENAME = "ReportCellTimeout"


class ReportError(GpuClusterError, RuntimeError):
    """The report notebook stopped on an error: the message is the kernel's, without its traceback."""


def kernel_config(socket_dir: Path) -> Any:
    """The traitlets configuration that puts the kernel's five ZeroMQ channels on Unix sockets
    named ``socket_dir/kernel-<port>`` (``KernelManager.transport = "ipc"``), or an empty one
    where that cannot work."""
    from traitlets.config import Config

    base = Path(socket_dir).resolve() / "kernel"
    if os.name != "posix" or len(os.fsencode(base)) > MAX_SOCKET_PATH:
        return Config()
    return Config({"KernelManager": {"transport": "ipc", "ip": str(base)}})


def _socket_dir() -> str | None:
    """A new private folder for the kernel's sockets under :data:`SOCKET_ROOT`, or None."""
    if os.name != "posix":
        return None
    try:
        return tempfile.mkdtemp(prefix="gpc-", dir=SOCKET_ROOT)
    except OSError:
        return None


def execute_notebook(notebook: str | os.PathLike, executed: Path, parameters: dict[str, Any], *,
                     cwd: str | os.PathLike, timeout_s: int, what: str = "the report",
                     timeout_option: str | None = None) -> None:
    """Execute ``notebook`` with ``parameters`` into ``executed`` (papermill, kernel ``python3``,
    no progress bar, the cells' output not logged), each cell given ``timeout_s`` seconds.

    A failing cell raises a :class:`ReportError` "``what`` could not be written: <the last line
    of the cell's error>"; a cell past the timeout one that names the timeout and
    ``timeout_option`` (the command-line option that raises it), a dead kernel one that says so."""
    import papermill as pm
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from traitlets.config import Config

    from gpucluster_lib.report.kernel_manager import ReportKernelManager

    timed_out: list[bool] = []

    def on_cell_error(cell: Any, cell_index: int, execute_reply: dict[str, Any]) -> None:
        timed_out.append(execute_reply.get("content", {}).get("ename") == _TIMEOUT_ENAME)

    def timeout_error() -> ReportError:
        fix = f"; raise {timeout_option}" if timeout_option else ""
        return ReportError(f"{what} could not be written: a cell ran longer than the {timeout_s} s timeout{fix}")

    # nbclient logs a timeout on papermill's logger; without a handler of its own Python's
    # last-resort handler would print it on standard error beside the one-line message
    log = logging.getLogger("papermill")
    if not any(isinstance(h, logging.NullHandler) for h in log.handlers):
        log.addHandler(logging.NullHandler())
    sockets = _socket_dir()
    try:
        pm.execute_notebook(
            str(notebook), str(executed), parameters=parameters, cwd=str(cwd), execution_timeout=timeout_s,
            progress_bar=False, kernel_name="python3", log_output=False,
            config=kernel_config(Path(sockets)) if sockets else Config(),
            interrupt_on_timeout=True, on_cell_error=on_cell_error, iopub_timeout=INTERRUPT_WAIT_S,
            kernel_manager_class=ReportKernelManager, shutdown_kernel="immediate",
            error_on_timeout={"ename": _TIMEOUT_ENAME, "evalue": f"longer than {timeout_s} s", "traceback": []})
    except pm.PapermillExecutionError as exc:  # e.g. a price the cost stage needs: its message, one line
        if any(timed_out):
            raise timeout_error() from None
        last = str(exc.evalue).strip().splitlines()[-1] if str(exc.evalue).strip() else exc.ename
        raise ReportError(f"{what} could not be written: {last}") from None
    except CellTimeoutError:  # the interrupted cell did not finish either
        raise timeout_error() from None
    except DeadKernelError:
        raise ReportError(f"{what} could not be written: the notebook's Python kernel died (out of memory?); "
                          "run it again, with more memory free") from None
    finally:
        if sockets:
            shutil.rmtree(sockets, ignore_errors=True)


def html_without_code(nb: Any) -> str:
    """The executed notebook ``nb`` as one HTML page without its code, prompts or saved widget
    state (nbconvert's ``HTMLExporter``, the state is removed from ``nb``); the page's title is
    ``nb.metadata.title`` if set."""
    from nbconvert import HTMLExporter

    nb.metadata.pop("widgets", None)
    exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    return body

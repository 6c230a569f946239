"""Run a report template with papermill, its kernel on local sockets, and export it as HTML.

The report and the sweep report each execute a notebook in a fresh Python kernel. By default
jupyter_client connects to that kernel over TCP on localhost, and ipykernel then logs "Kernel is
running over TCP without encryption" on the command's standard error (ipykernel's
``IPKernelApp.init_sockets``). The kernel only ever talks to this process, so
:func:`execute_notebook` connects over Unix domain sockets (ZeroMQ's ``ipc`` transport) in a
private temporary folder instead: nothing listens on a network port, and the kernel has nothing
to warn about. The kernel's standard error is left alone, so a real error still reaches the
user. Where Unix sockets are not available (Windows) or the folder's path is too long for one,
the default TCP transport is kept.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# a Unix socket's path holds at most 104 bytes on macOS and 108 on Linux (sockaddr_un.sun_path),
# and jupyter_client appends "-<port>" (up to 6 characters) to the socket's name
MAX_SOCKET_PATH = 104 - 7


def kernel_config(socket_dir: Path) -> Any:
    """The traitlets configuration that puts the kernel's five ZeroMQ channels on Unix sockets
    named ``socket_dir/kernel-<port>`` (``KernelManager.transport = "ipc"``), or an empty one
    where that cannot work."""
    from traitlets.config import Config

    base = Path(socket_dir).resolve() / "kernel"
    if os.name != "posix" or len(os.fsencode(base)) > MAX_SOCKET_PATH:
        return Config()
    return Config({"KernelManager": {"transport": "ipc", "ip": str(base)}})


def execute_notebook(notebook: str | os.PathLike, executed: Path, parameters: dict[str, Any], *,
                     cwd: str | os.PathLike, timeout_s: int) -> None:
    """Execute ``notebook`` with ``parameters`` into ``executed`` (papermill, kernel ``python3``,
    no progress bar, the cells' output not logged); the kernel's sockets live beside
    ``executed``, in its (temporary) folder. Raises papermill's ``PapermillExecutionError`` when
    a cell fails."""
    import papermill as pm

    pm.execute_notebook(str(notebook), str(executed), parameters=parameters, cwd=str(cwd),
                        execution_timeout=timeout_s, progress_bar=False, kernel_name="python3",
                        log_output=False, config=kernel_config(executed.parent))


def html_without_code(nb: Any) -> str:
    """The executed notebook ``nb`` as one HTML page without its code, prompts or saved widget
    state (nbconvert's ``HTMLExporter``, the state is removed from ``nb``); the page's title is
    ``nb.metadata.title`` if set."""
    from nbconvert import HTMLExporter

    nb.metadata.pop("widgets", None)
    exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    return body

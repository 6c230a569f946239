"""The report as a PDF: headless Chromium prints the HTML (A4, page numbers, vector charts).

Playwright drives Debian's ``chromium`` (never a downloaded browser): ``page.pdf`` with a
footer template for the page numbers; the document's CSS puts a page break before each
section (``break-before: page``) and keeps figures whole. The charts are inline SVG, so they
stay vectors in the PDF.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

from gpucluster_lib.errors import GpuClusterError

#: How to get the browser on Debian/Ubuntu.
INSTALL_HINT = "install it with: sudo apt-get install -y chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
FOOTER = ("<div style='font-size:8px;font-family:sans-serif;color:#555;width:100%;text-align:center;'>"
          "<span class='title'></span> · page <span class='pageNumber'></span> of "
          "<span class='totalPages'></span></div>")


class PdfError(GpuClusterError, RuntimeError):
    """The PDF could not be written (no browser, or the browser failed)."""


def chromium_path() -> str:
    """The system Chromium, or a :class:`PdfError` saying how to install it."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    raise PdfError(f"PDF output needs the Chromium browser, which is not on PATH; {INSTALL_HINT}")


def _print(html_path: Path, pdf_path: Path, timeout_s: float) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:  # pragma: no cover - playwright is a dependency
        raise PdfError("PDF output needs the playwright package: pip install playwright") from exc
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(html_path.resolve().as_uri(), wait_until="load", timeout=timeout_s * 1000)
            page.emulate_media(media="print")
            page.pdf(path=str(pdf_path), format="A4", print_background=True, display_header_footer=True,
                     header_template="<div></div>", footer_template=FOOTER, prefer_css_page_size=True,
                     margin={"top": "14mm", "bottom": "16mm", "left": "14mm", "right": "14mm"})
        finally:
            browser.close()


def html_to_pdf(html_path: str | os.PathLike, pdf_path: str | os.PathLike | None = None, *,
                timeout_s: float = 120) -> Path:
    """Print the HTML file ``html_path`` to ``pdf_path`` (default: beside it, ``.pdf``).

    Runs in a worker thread, so it also works inside a Jupyter kernel (whose asyncio loop
    Playwright's sync API refuses to share).
    """
    html_path = Path(html_path)
    pdf_path = Path(pdf_path) if pdf_path else html_path.with_suffix(".pdf")
    chromium_path()  # fail fast, with the install command
    errors: list[BaseException] = []

    def work() -> None:
        try:
            _print(html_path, pdf_path, timeout_s)
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            errors.append(exc)

    worker = threading.Thread(target=work, name="gpucluster-pdf", daemon=True)
    worker.start()
    worker.join(timeout_s + 30)
    if worker.is_alive():
        raise PdfError(f"Chromium did not finish printing {html_path.name} within {timeout_s:.0f} s")
    if errors:
        exc = errors[0]
        if isinstance(exc, GpuClusterError):
            raise exc
        raise PdfError(f"Chromium could not print {html_path.name}: {exc}") from exc
    return pdf_path

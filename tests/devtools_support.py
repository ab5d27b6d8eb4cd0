"""Driving headless Chromium through the DevTools protocol, for tests that need more than
``--dump-dom``: real key presses and mouse clicks, and downloads to a folder.

Chromium is started with ``--remote-debugging-pipe``: it reads protocol messages (JSON,
each ended by a NUL byte) on its file descriptor 3 and writes replies and events on 4, so
no port is opened. Downloads go to a folder through ``Browser.setDownloadBehavior``.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from test_report_browser import _FLAGS, _chromium

__all__ = ["DevTools"]

_KEYS = {"ArrowRight": 39, "ArrowLeft": 37, "Enter": 13}


class DevTools:
    """One headless Chromium and one page of it, driven through the protocol."""

    def __init__(self, tmp_path: Path) -> None:
        self._log = (tmp_path / "chromium.log").open("wb")
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def pipes() -> None:  # the child's fds 3 and 4, as --remote-debugging-pipe wants
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        self.process = subprocess.Popen(
            [_chromium(), *_FLAGS, f"--user-data-dir={tmp_path / 'devtools-profile'}",
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log,
            preexec_fn=pipes, close_fds=False)  # fds 3 and 4 are set in the child before exec
        os.close(to_browser)
        os.close(from_browser)
        self._next = 0
        self._messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()
        self.session: str | None = None

    def _pump(self) -> None:
        buffer = b""
        while chunk := os.read(self._read, 65536):
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for message in messages:
                self._messages.put(json.loads(message))

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             page: bool = True, timeout: float = 30.0) -> dict[str, Any]:
        """Send one command (to the page's session unless ``page=False``) and return its
        result; events that arrive meanwhile are kept in :attr:`events`."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if page and self.session is not None:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            got = self._messages.get(timeout=max(0.0, deadline - time.monotonic()))
            if got.get("id") == self._next:
                if "error" in got:
                    raise RuntimeError(f"{method}: {got['error']}")
                return dict(got.get("result", {}))
            self.events.append(got)

    def wait_event(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        """The first event ``method`` whose params include ``params`` (seen or to come)."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and all(
                        event.get("params", {}).get(k) == v for k, v in params.items()):
                    return event
            seen = len(self.events)
            self.events.append(self._messages.get(
                timeout=max(0.0, deadline - time.monotonic())))

    def open(self, url: str, downloads: Path) -> None:
        """Open ``url`` in a new page, downloads going to ``downloads``."""
        downloads.mkdir(parents=True, exist_ok=True)
        self.call("Browser.setDownloadBehavior", {"behavior": "allow", "eventsEnabled": True,
                                                  "downloadPath": str(downloads)}, page=False)
        target = self.call("Target.createTarget", {"url": "about:blank"}, page=False)
        self.session = self.call("Target.attachToTarget", {
            "targetId": target["targetId"], "flatten": True}, page=False)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able)."""
        got = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in got:
            raise RuntimeError(f"{expression}: {got['exceptionDetails']}")
        return got["result"].get("value")

    def press(self, key: str) -> None:
        """A key pressed and released, as a person's keyboard does it."""
        code = _KEYS.get(key, ord(key.upper()) if len(key) == 1 else 0)
        down: dict[str, Any] = {"type": "keyDown", "key": key, "windowsVirtualKeyCode": code}
        if len(key) == 1:
            down["text"] = key
        self.call("Input.dispatchKeyEvent", down)
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": key,
                                             "windowsVirtualKeyCode": code})

    def click(self, selector: str) -> None:
        """A left click at the middle of the element ``selector`` names (scrolled into
        view first, as a person would)."""
        box = self.evaluate(f"(function () {{ var e = document.querySelector("
                            f"{json.dumps(selector)}); e.scrollIntoView({{block: 'center'}}); "
                            "var r = e.getBoundingClientRect(); "
                            "return [r.left + r.width / 2, r.top + r.height / 2]; }())")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                   "button": "left", "clickCount": 1})

    def download(self, selector: str) -> str:
        """Click the element ``selector`` names and wait until the download it starts is
        saved; the file name the page suggested."""
        self.click(selector)
        begun = self.wait_event("Browser.downloadWillBegin")
        self.wait_event("Browser.downloadProgress", state="completed")
        return str(begun["params"]["suggestedFilename"])

    def errors(self) -> list[str]:
        """The page's errors so far: exceptions, console errors, blocked loads."""
        out = []
        for event in self.events:
            params = event.get("params", {})
            if event.get("method") == "Runtime.exceptionThrown":
                out.append(str(params["exceptionDetails"]))
            elif event.get("method") == "Log.entryAdded" and params["entry"]["level"] == "error":
                out.append(params["entry"]["text"])
            elif (event.get("method") == "Runtime.consoleAPICalled"
                  and params.get("type") == "error"):
                out.append(str(params.get("args")))
        return out

    def close(self) -> None:
        """Close the browser (and wait for it)."""
        with contextlib.suppress(RuntimeError, queue.Empty, OSError):
            self.call("Browser.close", page=False, timeout=10)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)
        os.close(self._write)
        self._reader.join(timeout=5)
        os.close(self._read)
        self._log.close()

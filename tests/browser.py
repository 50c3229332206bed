"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
JSON messages ending in NUL, read from fd 3, written to fd 4), so a test can click in a page
with nothing installed but Debian's chromium."""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

REPLY_SECONDS = 60


class Browser:
    """One headless Chromium with one page open."""

    def __init__(self, binary: str, width: int = 1200, height: int = 1400) -> None:
        to_chrome, self._writer = os.pipe()
        self._reader, from_chrome = os.pipe()

        options = "--headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars --remote-debugging-pipe"
        self.process = subprocess.Popen(  # bash (not dash: fds past 9) puts the pipes on fds 3 and 4
            ["bash", "-c", f'exec "$0" {options} about:blank 3<&{to_chrome} 4>&{from_chrome}', binary],
            pass_fds=(to_chrome, from_chrome),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome)
        os.close(from_chrome)
        self._buffer = b""
        self._last = 0
        self._session: str | None = None
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._last += 1
        message: dict[str, Any] = {"id": self._last, "method": method, "params": params or {}}
        if self._session is not None and not method.startswith("Target."):
            message["sessionId"] = self._session
        os.write(self._writer, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._last:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result

    def _receive(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._reader], [], [], REPLY_SECONDS)
            chunk = os.read(self._reader, 1 << 16) if ready else b""
            if not chunk:
                raise RuntimeError("chromium did not answer")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        found: dict[str, Any] = json.loads(message)
        return found

    def open(self, url: str) -> None:
        self.send("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete' && location.href === " + json.dumps(url))

    def evaluate(self, expression: str) -> Any:
        found = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in found:
            raise RuntimeError(f"{expression}: {found['exceptionDetails']}")
        return found["result"].get("value")

    def wait_for(self, condition: str) -> None:
        for _ in range(200):
            if self.evaluate(condition):
                return
            time.sleep(0.02)
        raise RuntimeError(f"never true: {condition}")

    def click(self, selector: str) -> None:
        """A mouse click in the middle of the element, as a user's."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1}
            )

    def type(self, selector: str, text: str) -> None:
        """Click into a field and type, as a user does (one input event)."""
        self.click(selector)
        self.send("Input.insertText", {"text": text})

    def screenshot(self, path: Path) -> None:
        self.evaluate("window.scrollTo(0, 0)")
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"]))

    def close(self) -> None:
        os.close(self._writer)
        os.close(self._reader)
        self.process.terminate()
        self.process.wait(timeout=30)

"""A minimal headless-Chromium driver over the DevTools protocol on a pipe
(--remote-debugging-pipe: commands on fd 3, replies on fd 4, NUL-separated JSON), so the
report check needs no websocket library.

    with Browser() as b:
        page = b.open("file:///.../report.html")
        page.wait_for("document.readyState === 'complete'")
        page.evaluate("document.images.length")
        page.screenshot("shot.png")
"""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-pipe"]


def find_chromium():
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    def __init__(self, binary=None, width=1400, height=1000, timeout=60):
        self.binary = binary or find_chromium()
        if not self.binary:
            raise BrowserError("no chromium binary on PATH")
        self.width, self.height, self.timeout = width, height, timeout
        self.proc = None
        self._id = 0
        self._buf = b""
        self.events = []

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="numaplace-chromium-")
        to_child_r, self._to_child = os.pipe()       # we write commands, chromium reads fd 3
        self._from_child, from_child_w = os.pipe()   # chromium writes fd 4, we read

        def fds():                                     # runs in the child before exec
            r, w = os.dup(to_child_r), os.dup(from_child_w)   # out of the way of 3 and 4
            os.dup2(r, 3)
            os.dup2(w, 4)

        argv = [self.binary, *FLAGS, f"--user-data-dir={self.profile}",
                f"--window-size={self.width},{self.height}", "about:blank"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     pass_fds=(3, 4), preexec_fn=fds)
        os.close(to_child_r)
        os.close(from_child_w)
        return self

    def __exit__(self, *exc):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:                             # noqa: BLE001 - closing anyway
            pass
        if self.proc:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    # -- protocol --------------------------------------------------------------------
    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("timed out waiting for chromium")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc else ""
                    raise BrowserError(f"chromium closed the pipe: {err}")
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None, timeout=None):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def open(self, url):
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        page.send("Page.enable")
        page.send("Runtime.enable")
        page.send("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        page.send("Page.navigate", {"url": url})
        return page


class Page:
    def __init__(self, browser, session):
        self.browser, self.session = browser, session

    def send(self, method, params=None, timeout=None):
        return self.browser.send(method, params, self.session, timeout)

    def evaluate(self, expression, await_promise=True, timeout=None):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": await_promise}, timeout)
        if "exceptionDetails" in r:
            raise BrowserError(f"JS error in {expression[:80]!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expression, timeout=30, interval=0.2):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.evaluate(expression):
                return True
            time.sleep(interval)
        raise BrowserError(f"timed out waiting for {expression!r}")

    def console_errors(self):
        out = []
        for e in self.browser.events:
            if e.get("sessionId") != self.session:
                continue
            if e.get("method") == "Runtime.exceptionThrown":
                out.append(e["params"]["exceptionDetails"].get("text", "exception"))
            elif e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") == "error":
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in e["params"]["args"]))
        return out

    def screenshot(self, path, full_page=False):
        params = {"format": "png"}
        if full_page:
            h = self.evaluate("Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": self.browser.width, "height": h, "scale": 1})
        data = self.send("Page.captureScreenshot", params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

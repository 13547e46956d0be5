"""Open a local HTML file in real headless Chromium and report what happened (tests only).

Chromium is driven through the DevTools protocol over `--remote-debugging-pipe` (JSON messages
separated by NUL bytes on file descriptors 3 and 4), so no websocket client, no port and no
third-party package is needed. `inspect(path)` loads the page and returns:

- `requests`: every URL the page asked for (Network.requestWillBeSent), the page itself included;
- `errors`: console errors (console.error/assert), uncaught exceptions, and browser log entries of
  level error (failed loads, Content-Security-Policy violations);
- `dialogs`: JavaScript dialogs the page opened (an `alert(1)` that got through would show here);
- `dom`: facts evaluated in the page after load (section ids in order, title, external references);
- `screenshot`: where the PNG of the first screen was written (and `screenshot_full`, the whole
  page scaled down, when asked for).

`outside_requests(result)` lists the URLs that are neither the file itself nor data:/about:.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--mute-audio",
]

# Refused before they leave the browser: still seen (Network.requestWillBeSent), never waited for.
BLOCKED = ["http://*", "https://*", "ws://*", "wss://*", "ftp://*"]

# Evaluated in the page once it has loaded: what the tests assert on.
DOM_PROBE = """JSON.stringify({
  title: document.title,
  sections: Array.from(document.querySelectorAll('section[id]')).map(s => s.id),
  external: Array.from(document.querySelectorAll('[src],[href]'))
    .map(e => e.getAttribute('src') || e.getAttribute('href'))
    .filter(u => u && !u.startsWith('#') && !u.startsWith('data:')),
  scripts: document.scripts.length,
  text_length: document.body ? document.body.innerText.length : 0,
  height: document.documentElement.scrollHeight
})"""


class BrowserError(RuntimeError):
    pass


class _Pipe:
    """The DevTools protocol over Chromium's debugging pipe."""

    def __init__(self, proc, write_fd, read_fd):
        self.proc, self.write_fd, self.read_fd = proc, write_fd, read_fd
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None, timeout=30.0):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self.write_fd, data):]
        want = self.next_id
        deadline = time.monotonic() + timeout
        while True:
            for reply in self._read(deadline):
                if reply.get("id") == want:
                    if "error" in reply:
                        raise BrowserError("%s failed: %s" % (method, reply["error"]))
                    return reply.get("result", {})
                if "method" in reply:
                    self._event(reply)

    def _event(self, msg):
        self.events.append(msg)
        if msg["method"] == "Page.javascriptDialogOpening":
            # A dialog blocks the page until answered: record it (the caller asserts on it) and
            # dismiss it so that loading goes on.
            self.send("Page.handleJavaScriptDialog", {"accept": False},
                      session=msg.get("sessionId"))

    def pump(self, seconds):
        """Collect events for `seconds`."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                for msg in self._read(deadline):
                    if "method" in msg:
                        self._event(msg)
        except TimeoutError:
            pass

    def wait_for(self, method, timeout):
        deadline = time.monotonic() + timeout
        while not any(e["method"] == method for e in self.events):
            for msg in self._read(deadline):
                if "method" in msg:
                    self._event(msg)

    def _read(self, deadline):
        """Yield the complete messages available, blocking until at least one arrives."""
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message from Chromium in time")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium closed the pipe (exit %s)" % self.proc.poll())
            self.buffer += chunk
        *complete, self.buffer = self.buffer.split(b"\0")
        for raw in complete:
            if raw:
                yield json.loads(raw)


def _event_errors(events):
    errors = []
    for e in events:
        m, p = e["method"], e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", "")))
                            for a in p.get("args", []))
            errors.append("console.%s: %s" % (p["type"], text))
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            errors.append("exception: %s %s" % (d.get("text", ""),
                                                d.get("exception", {}).get("description", "")))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            entry = p["entry"]
            errors.append("log(%s): %s %s" % (entry.get("source"), entry.get("text"),
                                              entry.get("url", "")))
        elif m == "Network.loadingFailed" and not p.get("canceled"):
            errors.append("load failed: %s" % p.get("errorText"))
    return errors


def inspect(path, screenshot=None, screenshot_full=None, width=1280, height=1000,
            settle_s=1.0, timeout=60.0, chromium=CHROMIUM, fragment=None, probes=None,
            media=None, pdf=None):
    """Load `path` in headless Chromium; see the module docstring for what comes back.
    `fragment` (a section id) scrolls there before the first-screen screenshot; `probes`
    ({name: JavaScript expression}) are evaluated after load, their values under `probes`;
    `media` ("print") emulates that CSS media type from the start; `pdf` writes the page
    printed to PDF (A4 landscape, the page's own @page rules preferred) to that path."""
    path = Path(path).resolve()
    url = path.as_uri()
    profile = tempfile.mkdtemp(prefix="tfspeed-chromium-")
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    # Move the child's ends above 4, so that placing them on 3 and 4 cannot clobber either
    # (bash, not sh: dash takes single-digit descriptors only).
    child_in, child_out = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child_r, from_child_w))
    os.close(to_child_r)
    os.close(from_child_w)
    shell = 'exec "$0" "$@" 3<&%d 4>&%d %d<&- %d>&-' % (child_in, child_out, child_in, child_out)
    cmd = ["/bin/bash", "-c", shell, chromium, *FLAGS, "--user-data-dir=" + profile,
           "--remote-debugging-pipe", "about:blank"]
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, pass_fds=(child_in, child_out), stdin=subprocess.DEVNULL,
                            stdout=log, stderr=log)
    os.close(child_in)
    os.close(child_out)
    pipe = _Pipe(proc, to_child_w, from_child_r)
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"}, timeout=timeout)
        session = pipe.send("Target.attachToTarget",
                            {"targetId": target["targetId"], "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            pipe.send(domain + ".enable", session=session)
        # The page is a local file: a request that would leave the machine is a fault the tests
        # catch (`requests`), and it must not stall the load on a closed network's DNS lookups.
        pipe.send("Network.setBlockedURLs", {"urls": BLOCKED}, session=session)
        pipe.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        if media:
            pipe.send("Emulation.setEmulatedMedia", {"media": media}, session=session)
        pipe.events.clear()  # about:blank's own events are not the page's
        pipe.send("Page.navigate", {"url": url + ("#" + fragment if fragment else "")},
                  session=session)
        pipe.wait_for("Page.loadEventFired", timeout)
        pipe.pump(settle_s)  # late scripts, timers, lazy loads
        dom = json.loads(pipe.send("Runtime.evaluate", {"expression": DOM_PROBE,
                                                         "returnByValue": True},
                                   session=session)["result"]["value"])
        result = {"url": url, "dom": dom, "probes": {}}
        for name, expression in (probes or {}).items():
            reply = pipe.send("Runtime.evaluate", {"expression": expression,
                                                   "returnByValue": True}, session=session)
            result["probes"][name] = reply["result"].get("value")
        pipe.pump(0.2)
        if screenshot:
            shot = pipe.send("Page.captureScreenshot", {"format": "png"}, session=session)
            Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
            result["screenshot"] = str(screenshot)
        if screenshot_full:
            full_h = min(int(dom["height"]), 30000)
            scale = 0.5
            shot = pipe.send("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": width, "height": full_h, "scale": scale}},
                session=session, timeout=timeout)
            Path(screenshot_full).write_bytes(base64.b64decode(shot["data"]))
            result["screenshot_full"] = str(screenshot_full)
        if pdf:
            printed = pipe.send("Page.printToPDF", {
                "landscape": True, "printBackground": True, "preferCSSPageSize": True,
                "paperWidth": 11.69, "paperHeight": 8.27}, session=session, timeout=timeout)
            Path(pdf).write_bytes(base64.b64decode(printed["data"]))
            result["pdf"] = str(pdf)
        pipe.pump(0.2)
        events = pipe.events
        result["requests"] = [e["params"]["request"]["url"] for e in events
                              if e["method"] == "Network.requestWillBeSent"]
        result["errors"] = _event_errors(events)
        result["dialogs"] = [e["params"].get("message") for e in events
                             if e["method"] == "Page.javascriptDialogOpening"]
        result["warnings"] = [
            e["params"]["entry"].get("text") for e in events
            if e["method"] == "Log.entryAdded" and e["params"]["entry"].get("level") == "warning"]
        try:
            pipe.send("Browser.close", timeout=10)
        except (BrowserError, TimeoutError):
            pass
        return result
    except (BrowserError, TimeoutError) as exc:
        log.seek(0)
        tail = log.read()[-3000:].decode("utf-8", "replace")
        raise BrowserError("%s; Chromium's output ends with:\n%s" % (exc, tail)) from exc
    finally:
        for fd in (to_child_w, from_child_r):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(profile, ignore_errors=True)


def outside_requests(result):
    """URLs requested that are neither the page's own file nor data:/about: URLs."""
    own = result["url"]
    return [u for u in result["requests"]
            if u.split("#")[0] != own and not u.startswith(("data:", "about:"))]


if __name__ == "__main__":
    import sys

    print(json.dumps(inspect(sys.argv[1], screenshot=sys.argv[2] if len(sys.argv) > 2 else None,
                             fragment=sys.argv[3] if len(sys.argv) > 3 else None), indent=1))


needs_chromium = pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason="Chromium is not installed at /usr/bin/chromium (Debian: apt-get install chromium); "
           "CI installs it")

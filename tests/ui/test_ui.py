#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The web inspector (/ui) in a real headless Chromium against a real hookd.

    HOOKD_BIN=build/hookd SRC=. BUILD=build /usr/bin/python3 tests/ui/test_ui.py

Starts its own hookd (temporary SQLite store, a sources file with a
GitHub-signed source, forwarding to tests/forward/sink.py, an admin token made
with `hookd token create` before the start) and drives the page with Selenium
(Debian's python3-selenium, chromium, chromium-driver): first contentful
paint, login, envelope and signed deliveries appearing live (the time from the
2xx to the row in the DOM, measured in the page), filters in the URL across a
reload, the detail (headers, pretty JSON, SHA-256, verification), keyboard
navigation, copy as curl (the command is run and must replay the delivery),
redeliver (the sink gets it again), delete with confirmation, the Refused
view, an XSS corpus rendered inert (no alert, no canary, no console error, no
CSP violation), a revoked and an expired session back to the login form with
the filters kept, the JS heap while 10,000 deliveries stream past, paging deep
into history, and screenshots (BUILD/ui-shots/).

Exit 0 when all holds, 1 otherwise, 77 (skipped) when chromium, chromedriver
or selenium is missing.
"""
import concurrent.futures
import hashlib
import hmac
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("SRC") or os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("BUILD") or os.path.join(SRC, "build")
HOOKD = os.environ.get("HOOKD_BIN") or os.path.join(BUILD, "hookd")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver") or (
    "/usr/bin/chromedriver" if os.access("/usr/bin/chromedriver", os.X_OK) else None)
try:
    from selenium import webdriver
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
except ImportError:
    webdriver = None

GH_SECRET = "ui-test-secret-\u00e9"        # non-ASCII on purpose: HMAC over its UTF-8
failures = []
T0 = time.monotonic()


def log(msg):
    print("[%6.1fs] %s" % (time.monotonic() - T0, msg), flush=True)


def check(cond, what):
    if not cond:
        failures.append(what)
        log("FAIL: " + what)
    return cond


class Fatal(Exception):
    pass


def until(fn, timeout, what, step=0.02):
    """fn() until truthy; its value, or Fatal after timeout seconds."""
    end = time.monotonic() + timeout
    last = None
    while True:
        try:
            v = fn()
            if v:
                return v
        except Exception as e:  # a stale element mid-render: ask again
            last = e
        if time.monotonic() > end:
            raise Fatal("timed out (%.0f s) waiting for %s%s" % (timeout, what, " (%r)" % last if last else ""))
        time.sleep(step)


# ---- hookd, its sink, HTTP ----

class Hookd:
    def __init__(self, tmp, name, extra_env=None):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        self.db = os.path.join(self.dir, "hookd.db")
        self.env = dict(os.environ, HOOKD_SQLITE_PATH=self.db, HOOKD_LOG_LEVEL="warn", HOOKD_SQLITE_SYNC="normal")
        self.env.update(extra_env or {})
        self.proc = None
        self.err = None
        self.port = 0

    def token(self, name, scope):
        out = subprocess.run([HOOKD, "token", "create", "--name", name, "--scope", scope], env=self.env,
                             capture_output=True, text=True, timeout=60)
        m = re.search(r"hkd_[A-Za-z0-9_-]{43}", out.stdout)
        if out.returncode != 0 or not m:
            raise Fatal("hookd token create failed: %s %s" % (out.stdout, out.stderr))
        return m.group(0)

    def revoke(self, name):
        out = subprocess.run([HOOKD, "token", "revoke", name], env=self.env, capture_output=True, text=True,
                             timeout=60)
        if out.returncode != 0:
            raise Fatal("hookd token revoke failed: %s" % out.stderr)

    def start(self):
        self.err = open(os.path.join(self.dir, "stderr"), "w+")
        self.proc = subprocess.Popen([HOOKD, "--port", "0", "--host", "127.0.0.1"], env=self.env,
                                     stdout=subprocess.PIPE, stderr=self.err, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"Listening on: http://127\.0\.0\.1:(\d+)", line)
        if not m:
            self.proc.kill()
            raise Fatal("hookd did not start: %r\n%s" % (line, self.stderr()))
        self.port = int(m.group(1))
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def stderr(self):
        if not self.err:
            return ""
        self.err.flush()
        with open(self.err.name) as f:
            return f.read()[-6000:]

    def stop(self):
        """SIGTERM; hookd must exit 0 (under ASan: no error, no leak)."""
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        return rc


class Client:
    """Keep-alive HTTP/1.1 to hookd (one per thread)."""

    def __init__(self, port):
        self.port = port
        self.c = None

    def req(self, method, path, body=None, headers=None):
        for attempt in range(2):
            if self.c is None:
                self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                self.c.request(method, path, body=body, headers=headers or {})
                r = self.c.getresponse()
                data = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.c.close()
                    self.c = None
                return r.status, data
            except (http.client.HTTPException, ConnectionError):
                self.c.close()
                self.c = None
                if attempt:
                    raise
        raise AssertionError("unreachable")


def envelope(cl, source, event, payload):
    body = json.dumps({"source": source, "eventType": event, "payload": payload}).encode()
    st, data = cl.req("POST", "/api/webhooks", body, {"Content-Type": "application/json"})
    return st, (json.loads(data) if data[:1] == b"{" else data)


def github(cl, body, event, delivery, extra=None, secret=GH_SECRET, ctype="application/json"):
    sig = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    h = {"Content-Type": ctype, "X-Hub-Signature-256": "sha256=" + sig, "X-GitHub-Event": event,
         "X-GitHub-Delivery": delivery, "User-Agent": "GitHub-Hookshot/ui-test"}
    h.update(extra or {})
    st, data = cl.req("POST", "/hooks/gh", body, h)
    return st, (json.loads(data) if data[:1] == b"{" else data)


class Sink:
    def __init__(self, tmp):
        self.out = open(os.path.join(tmp, "sink.out"), "w+")
        self.proc = subprocess.Popen([sys.executable, os.path.join(SRC, "tests", "forward", "sink.py"), "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=self.out, text=True)
        self.port = int(self.proc.stdout.readline())

    def records(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", "/_ledger")
        recs = json.loads(c.getresponse().read())
        c.close()
        return recs

    def count(self, ce_id):
        n = 0
        for r in self.records():
            if any(k.lower() == "ce-id" and v == str(ce_id) for k, v in r["headers"]):
                n += 1
        return n

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# ---- the browser ----

INSTRUMENT = r"""
window.__csp = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + (e.sample || ''));
});
window.__alerts = 0;
window.alert = window.confirm = window.prompt = function () { window.__alerts++; return null; };
window.__seen = {};
"""

OBSERVE = r"""
const sp = document.getElementById('spacer');
if (!window.__mo) {
  window.__mo = new MutationObserver(function (ms) {
    const t = performance.timeOrigin + performance.now();
    for (const m of ms) for (const n of m.addedNodes)
      if (n.id && n.id.charAt(0) === 'r' && !(n.id in window.__seen)) window.__seen[n.id] = t;
  });
  window.__mo.observe(sp, {childList: true});
}
return true;
"""


def browser(tmp):
    o = webdriver.ChromeOptions()
    o.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
              "--disable-extensions", "--disable-background-networking", "--disable-renderer-backgrounding",
              "--disable-background-timer-throttling", "--disable-backgrounding-occluded-windows",
              "--js-flags=--expose-gc", "--enable-precise-memory-info", "--window-size=1400,900",
              "--user-data-dir=" + os.path.join(tmp, "chromium")]:
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    svc = Service(CHROMEDRIVER, log_path=os.path.join(tmp, "chromedriver.log"))
    d = webdriver.Chrome(service=svc, options=o)
    d.set_script_timeout(30)
    d.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": INSTRUMENT})
    viewport(d, 1400, 900)
    return d


def viewport(d, w, h):
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": w, "height": h, "deviceScaleFactor": 1, "mobile": False})
    time.sleep(0.15)


def js(d, script, *args):
    return d.execute_script(script, *args)


def shown(d, eid):
    return js(d, "const e = document.getElementById(arguments[0]); return !!e && !e.hidden && e.offsetParent !== null;",
              eid)


def text(d, eid):
    return js(d, "const e = document.getElementById(arguments[0]); return e ? e.textContent : null;", eid)


def query(d):
    return urllib.parse.parse_qs(urllib.parse.urlparse(d.current_url).query)


def row_ids(d):
    """Ids of the rows in the DOM, top to bottom."""
    return js(d, """return Array.from(document.querySelectorAll('#spacer .row'))
        .map(e => [+e.dataset.id, new DOMMatrixReadOnly(getComputedStyle(e).transform).m42])
        .sort((a, b) => a[1] - b[1]).map(x => x[0]);""")


def wait_live(d):
    until(lambda: js(d, "return document.getElementById('live').classList.contains('on');"), 10, "the live feed")


def login(d, token):
    until(lambda: shown(d, "login"), 10, "the login form")
    f = d.find_element(By.ID, "token")
    f.clear()
    f.send_keys(token)
    d.find_element(By.ID, "login-btn").click()
    until(lambda: shown(d, "app") or shown(d, "refused"), 10, "the app after login")


def severe_logs(d, allow=()):
    out = []
    for e in d.get_log("browser"):
        if e["level"] != "SEVERE":
            continue
        if any(a in e["message"] for a in allow):
            continue
        out.append(e["message"])
    return out


def security_state(d):
    return js(d, "return {csp: window.__csp, alerts: window.__alerts, xss: window.__xss === undefined ? null : window.__xss};")


def no_alert(d):
    try:
        d.switch_to.alert.dismiss()
        return False
    except NoAlertPresentException:
        return True


def reveal(d, wid):
    """Scroll the list until row #wid is rendered (only rows near the
    viewport exist in the DOM)."""
    js(d, "document.getElementById('list').scrollTop = 0;")
    for _ in range(400):
        if js(d, "const e = document.getElementById(arguments[0]);"
                 "if (e) e.scrollIntoView({block: 'nearest'}); return !!e;", "r%d" % wid):
            return
        if js(d, "const l = document.getElementById('list'); const y = l.scrollTop; l.scrollTop += l.clientHeight / 2;"
                 "return l.scrollTop === y;"):
            time.sleep(0.1)
        time.sleep(0.03)
    raise Fatal("row #%d never rendered" % wid)


def open_row(d, wid):
    reveal(d, wid)
    # A row element is replaced when its state changes: click the current one.
    until(lambda: d.find_element(By.ID, "r%d" % wid).click() or True, 5, "a click on row #%d" % wid)
    until(lambda: (text(d, "d-title") is not None and "#%d" % wid in text(d, "d-title")), 10, "the detail of #%d" % wid)


def shot(d, path):
    time.sleep(0.3)
    d.save_screenshot(path)
    log("screenshot " + path)


# ---- the steps ----

def step_paint(d, base):
    # The origin's renderer process first (Chromium starts one per site):
    # the paint measured is the page's, from an empty HTTP cache.
    d.get(base + "/q/health/live")
    d.get_log("browser")   # (its favicon.ico 404)
    d.get(base + "/ui")
    until(lambda: js(d, "return document.readyState === 'complete';"), 10, "the page load")
    fcp = until(lambda: js(d, """const p = performance.getEntriesByType('paint')
        .find(e => e.name === 'first-contentful-paint'); return p ? p.startTime : null;"""), 5, "a contentful paint")
    nav = js(d, "const n = performance.getEntriesByType('navigation')[0]; return [n.responseEnd, n.domContentLoadedEventEnd];")
    log("first contentful paint of /ui: %.1f ms (response end %.1f ms, DOMContentLoaded %.1f ms)" % (fcp, nav[0], nav[1]))
    check(fcp <= 300, "first contentful paint %.1f ms <= 300 ms" % fcp)
    return fcp


def step_live(d, cl):
    js(d, OBSERVE)
    lat = []
    t = time.time()
    st, a = envelope(cl, "shop", "order.created", json.dumps({"order": 42, "items": [{"sku": "A-1", "qty": 2}]}))
    t2xx = time.time() * 1000
    check(st == 201, "envelope POST 201 (got %s)" % st)
    aid = a["id"]
    seen = until(lambda: js(d, "return window.__seen[arguments[0]];", "r%d" % aid), 10, "envelope row #%d live" % aid)
    lat.append(seen - t2xx)
    # The next one at least a second later: the time-range filter below splits them.
    time.sleep(max(0, 1.2 - (time.time() - t)))
    body = json.dumps({"action": "opened", "number": 7, "pull_request": {"title": "Fix it", "draft": False,
                       "labels": ["bug", "ui"], "user": {"login": "octocat", "id": 1}}}, indent=1).encode()
    st, b = github(cl, body, "pull_request", "11111111-2222-3333-4444-555555555555", {"X-Evil": "<b>kept</b>"})
    t2xx = time.time() * 1000
    check(st == 201, "signed /hooks/gh delivery 201 (got %s %s)" % (st, b))
    bid = b["id"]
    seen = until(lambda: js(d, "return window.__seen[arguments[0]];", "r%d" % bid), 10, "signed row #%d live" % bid)
    lat.append(seen - t2xx)
    log("live: 2xx -> row in the DOM: envelope %.1f ms, signed delivery %.1f ms" % tuple(lat))
    for x in lat:
        check(x <= 1000, "a new delivery visible within 1 s of its 2xx (%.1f ms)" % x)
    ids = row_ids(d)
    check(ids[:2] == [bid, aid], "newest first: %r" % ids[:2])
    vtext = js(d, "return document.querySelector('#r%d .c-ver').textContent + '|' + document.querySelector('#r%d .c-st').textContent;" % (aid, bid))
    check(vtext.startswith("envelope|"), "the envelope row says envelope: %r" % vtext)
    check(vtext.split("|")[1] in ("pending", "delivered"), "forwarding state in the row: %r" % vtext)
    return aid, bid, body, lat


def step_filters(d, cl, aid, bid, a_at):
    f = d.find_element(By.ID, "f-source")
    f.clear()
    f.send_keys("gh")
    d.find_element(By.ID, "f-apply").click()
    until(lambda: query(d).get("source") == ["gh"], 5, "source=gh in the URL")
    until(lambda: row_ids(d) and aid not in row_ids(d) and bid in row_ids(d), 10, "the list filtered to gh")
    # Live, filtered by the server: another source does not appear, gh does.
    wait_live(d)
    st, other = envelope(cl, "not-gh", "x", None)
    st2, mine = github(cl, b'{"zen":"filtered"}', "ping", "filter-ping-1")
    until(lambda: mine["id"] in row_ids(d), 5, "a gh delivery live under the filter")
    time.sleep(0.3)
    check(other["id"] not in row_ids(d), "a row of another source stays out of the filtered live list")
    d.refresh()
    until(lambda: shown(d, "app"), 10, "the app after reload")
    until(lambda: bid in row_ids(d), 10, "the filtered list after reload")
    check(d.find_element(By.ID, "f-source").get_attribute("value") == "gh", "the filter input keeps gh after reload")
    check(aid not in row_ids(d) and other["id"] not in row_ids(d), "reload keeps the view filtered")
    # Time range: up to the second after the envelope (the signed one came >= 1.2 s later).
    d.find_element(By.ID, "f-clear").click()
    until(lambda: "source" not in query(d) and aid in row_ids(d), 10, "filters cleared")
    to_local = js(d, """const d = new Date(Math.ceil(Date.parse(arguments[0]) / 1000) * 1000);
        const p = n => String(n).padStart(2, '0');
        return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' +
               p(d.getMinutes()) + ':' + p(d.getSeconds());""", a_at)
    js(d, "document.getElementById('f-to').value = arguments[0];", to_local)
    d.find_element(By.ID, "f-apply").click()
    until(lambda: "to" in query(d), 5, "to= in the URL")
    until(lambda: aid in row_ids(d) and bid not in row_ids(d), 10, "the time range applied (GraphQL receivedBefore)")
    check("past" in text(d, "live"), "a range ending in the past is not live: %r" % text(d, "live"))
    d.refresh()
    until(lambda: shown(d, "app") and aid in row_ids(d), 10, "the time-filtered list after reload")
    check(bid not in row_ids(d), "reload keeps the time range")
    check(d.find_element(By.ID, "f-to").get_attribute("value") == to_local, "the To input is filled from the URL")
    d.find_element(By.ID, "f-clear").click()
    until(lambda: "to" not in query(d) and bid in row_ids(d), 10, "filters cleared again")
    wait_live(d)
    return other["id"], mine["id"]


def step_detail(d, bid, body):
    open_row(d, bid)
    until(lambda: d.find_elements(By.ID, "d-tree"), 5, "the pretty JSON tree")
    check(text(d, "d-sha256") == hashlib.sha256(body).hexdigest(), "the detail's SHA-256 is the body's: %r" % text(d, "d-sha256"))
    check(text(d, "d-scheme") == "github", "verification scheme github: %r" % text(d, "d-scheme"))
    check(text(d, "d-secret") == "env:UI_GH_SECRET", "the secret label that matched: %r" % text(d, "d-secret"))
    check("verified" in text(d, "d-result"), "verification result: %r" % text(d, "d-result"))
    check(text(d, "d-delivery-id") == "11111111-2222-3333-4444-555555555555", "dedup: the delivery id")
    check(str(len(body)) in text(d, "d-size"), "size in bytes: %r" % text(d, "d-size"))
    hdrs = text(d, "d-headers")
    check("x-github-event" in hdrs and "pull_request" in hdrs, "request headers shown: %r" % hdrs[:200])
    check("<b>kept</b>" in hdrs, "a kept header's value as text")
    tree = text(d, "d-tree")
    check('"pull_request"' in tree and '"octocat"' in tree and '"Fix it"' in tree, "pretty JSON shows the nested values")
    # Collapsible: close the pull_request object, its keys go; open again.
    closed = js(d, """const s = Array.from(document.querySelectorAll('#d-tree summary'))
          .find(s => s.textContent.startsWith('"pull_request"'));
        s.click(); return s.parentElement.open;""")
    check(closed is False, "a JSON object collapses")
    check(js(d, "return document.getElementById('d-tree').innerText.indexOf('octocat') < 0;"), "its contents hidden when collapsed")
    d.find_element(By.ID, "d-rawtoggle").click()
    check(text(d, "d-raw") == body.decode(), "Raw shows the body byte for byte")
    d.find_element(By.ID, "d-rawtoggle").click()
    check(d.find_elements(By.ID, "d-tree"), "back to the pretty view")
    href = d.find_element(By.ID, "a-download").get_attribute("href")
    check(href.endswith("/api/webhooks/%d/body?download=1" % bid), "download link to the raw body: %r" % href)
    fwd = text(d, "d-fwd")
    check("delivered" in fwd or "pending" in fwd, "forwarding state shown: %r" % fwd)


def step_keyboard(d):
    js(d, "document.getElementById('d-close').click();")
    until(lambda: not shown(d, "detail"), 5, "the detail closed")
    lst = d.find_element(By.ID, "list")
    js(d, "document.getElementById('list').focus();")
    lst.send_keys(Keys.HOME)
    ids = row_ids(d)
    sel = lambda: js(d, "const e = document.querySelector('#spacer .row[aria-selected=\"true\"]'); return e ? +e.dataset.id : 0;")
    check(sel() == ids[0], "Home selects the first row")
    lst.send_keys("j")
    check(sel() == ids[1], "j moves down")
    lst.send_keys(Keys.ARROW_DOWN)
    check(sel() == ids[2], "ArrowDown moves down")
    lst.send_keys("k")
    check(sel() == ids[1], "k moves up")
    check(js(d, "return document.activeElement.id") == "list", "focus stays on the list")
    check(js(d, "return getComputedStyle(document.activeElement).outlineStyle") != "none", "focus is visible on the list")
    lst.send_keys(Keys.ENTER)
    until(lambda: shown(d, "detail") and "#%d" % ids[1] in (text(d, "d-title") or ""), 5, "Enter opens the selected row")
    check(query(d).get("open") == [str(ids[1])], "the open row is in the URL")
    d.switch_to.active_element.send_keys(Keys.ESCAPE)
    until(lambda: not shown(d, "detail"), 5, "Esc closes the detail")
    check("open" not in query(d), "closing drops open= from the URL")


def copied_curl(d, wid):
    """Open #wid, press Copy as curl, run the command; (its output, exit status)."""
    open_row(d, wid)
    d.find_element(By.ID, "a-curl").click()
    until(lambda: js(d, "return document.getElementById('curl').open;"), 5, "the curl dialog")
    cmd = d.find_element(By.ID, "curl-text").get_attribute("value")
    js(d, "document.getElementById('curl').close();")
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, timeout=30)
    return cmd, out.stdout.decode("utf-8", "replace"), out.returncode


def step_curl(d, base, aid, bid):
    open_row(d, bid)
    d.find_element(By.ID, "a-curl").click()
    until(lambda: js(d, "return document.getElementById('curl').open;"), 5, "the curl dialog")
    cmd = d.find_element(By.ID, "curl-text").get_attribute("value")
    check(cmd.startswith("printf '%s' '") and ("'%s/hooks/gh'" % base) in cmd, "curl for the delivery: %r" % cmd[:120])
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=30)
    check(out.returncode == 0 and json.loads(out.stdout or "{}") == {"id": bid, "duplicate": True},
          "the copied curl replays the signed delivery byte for byte (a duplicate of #%d): %r %r" % (bid, out.stdout, out.stderr))
    js(d, "document.getElementById('curl').close();")
    open_row(d, aid)
    d.find_element(By.ID, "a-curl").click()
    until(lambda: js(d, "return document.getElementById('curl').open;"), 5, "the curl dialog")
    cmd = d.find_element(By.ID, "curl-text").get_attribute("value")
    out = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=30)
    got = json.loads(out.stdout) if out.stdout.startswith("{") else {}
    check(out.returncode == 0 and got.get("source") == "shop" and got.get("eventType") == "order.created" and
          json.loads(got.get("payload") or "null") == {"order": 42, "items": [{"sku": "A-1", "qty": 2}]},
          "the copied curl posts the same envelope again: %r %r" % (out.stdout[:200], out.stderr))
    js(d, "document.getElementById('curl').close();")
    return got.get("id")


def step_redeliver(d, sink, bid):
    open_row(d, bid)
    until(lambda: sink.count(bid) >= 1, 20, "the first forward of #%d" % bid)
    until(lambda: "delivered" in text(d, "d-fwd"), 10, "the detail showing delivered")
    before = sink.count(bid)
    d.find_element(By.ID, "a-redeliver").click()
    until(lambda: sink.count(bid) > before, 20, "the sink receiving #%d again" % bid)
    until(lambda: text(d, "d-attempts") == "1" and "delivered" in text(d, "d-fwd") and
          "Queued" in (text(d, "d-msg") or ""), 10, "the detail after redelivery")
    log("redeliver: the sink got #%d %d time(s), then %d" % (bid, before, sink.count(bid)))


def step_delete(d, cl, token, wid):
    open_row(d, wid)
    d.find_element(By.ID, "a-delete").click()
    until(lambda: js(d, "return document.getElementById('confirm').open;"), 5, "the confirmation")
    check("#%d" % wid in text(d, "confirm-title"), "the confirmation names the row")
    d.find_element(By.ID, "confirm-cancel").click()
    time.sleep(0.3)
    st, _ = cl.req("GET", "/api/webhooks/%d" % wid, headers={"Authorization": "Bearer " + token})
    check(st == 200 and wid in row_ids(d), "Cancel deletes nothing")
    d.find_element(By.ID, "a-delete").click()
    until(lambda: js(d, "return document.getElementById('confirm').open;"), 5, "the confirmation again")
    d.find_element(By.ID, "confirm-ok").click()
    until(lambda: wid not in row_ids(d) and not shown(d, "detail"), 5, "the row gone after delete")
    st, _ = cl.req("GET", "/api/webhooks/%d" % wid, headers={"Authorization": "Bearer " + token})
    check(st == 404, "the API answers 404 for the deleted row (got %s)" % st)


def step_refused(d, cl):
    st, r = github(cl, b'{"forged":true}', "push", "forged-1", secret="not-the-secret")
    check(st == 401 and r.get("reason") == "no_matching_signature", "a forged delivery is refused: %s %r" % (st, r))
    st2, _ = cl.req("POST", "/hooks/no-such-source", b"{}", {"Content-Type": "application/json"})
    check(st2 == 404, "an unknown source is refused 404 (got %s)" % st2)
    d.find_element(By.ID, "tab-refused").click()
    until(lambda: query(d).get("view") == ["refused"], 5, "view=refused in the URL")
    items = until(lambda: js(d, "return Array.from(document.querySelectorAll('#refused-list .ritem')).map(e => e.textContent);")
                  if shown(d, "refused") else None, 10, "refused deliveries listed")
    check(any("no_matching_signature" in t and "gh" in t and "forged-1" in t for t in items),
          "the forged delivery shows with its reason and delivery id")
    check(any("unknown_source" in t and "no-such-source" in t for t in items), "the unknown source shows")
    # Live: a new refusal appears without reload.
    github(cl, b'{"forged":2}', "push", "forged-2", secret="nope")
    until(lambda: "forged-2" in js(d, "return document.getElementById('refused-list').textContent;"), 8,
          "a new refusal appearing in the open view")
    d.find_element(By.ID, "tab-list").click()
    until(lambda: shown(d, "app") and "view" not in query(d), 5, "back to the list")


def step_xss(d, cl, corpus, shots):
    strings = corpus["strings"]
    ascii_ok = [s for s in strings if all(32 <= ord(c) < 127 for c in s)]
    ids, stored = [], []
    d.get_log("browser")   # drain: from here on nothing may be logged
    for i, s in enumerate(strings):
        st, w = envelope(cl, s, s, s)
        if check(st == 201, "envelope with a hostile source/event/payload stored (%s %r)" % (st, s)):
            ids.append(w["id"])
            stored.append(("envelope", w["id"], s))
    for i, s in enumerate(ascii_ok):
        body = json.dumps({s: s, "nested": {"html": s, "list": [s, 1, None, True]}}).encode()
        st, w = github(cl, body, s, "xss-json-%d" % i, {"X-Evil": s})
        if check(st == 201, "signed delivery with hostile header/event/body stored (%s)" % st):
            stored.append(("json", w["id"], s))
        st, w = github(cl, s.encode(), "html", "xss-html-%d" % i, {"X-Evil": s}, ctype="text/html")
        if check(st == 201, "text/html delivery stored (%s)" % st):
            stored.append(("html", w["id"], s))
    for i, h in enumerate(corpus["bytes_hex"]):
        st, w = github(cl, bytes.fromhex(h), "bytes", "xss-bytes-%d" % i, ctype="text/plain")
        if check(st == 201, "malformed UTF-8 body stored (%s)" % st):
            stored.append(("bytes", w["id"], h))
    big = json.dumps({"items": [strings[i % len(strings)] for i in range(24000)]}).encode()[:1048000]
    big = big[:big.rfind(b",")] + b"]}"
    check(len(big) > 1000000, "a 1 MB body (%d bytes)" % len(big))
    st, w = github(cl, big, "big", "xss-big", ctype="application/json")
    if check(st == 201, "1 MB JSON delivery stored (%s)" % st):
        stored.append(("big", w["id"], None))
    bigtxt = ("<script>window.__xss=99</script>" * 33000)[:1040000]
    st, w = envelope(cl, "big-envelope", "big", bigtxt)
    if check(st == 201, "1 MB envelope payload stored (%s)" % st):
        stored.append(("bigenv", w["id"], None))
    cl.req("POST", "/hooks/%3Cimg%20src%3Dx%20onerror%3Dwindow.__xss%3D20%3E", b"<svg onload=alert(1)>",
           {"Content-Type": "text/html"})
    last = stored[-1][1]
    until(lambda: last in row_ids(d), 15, "the corpus rows in the live list")
    for kind, wid, s in stored:
        open_row(d, wid)
        until(lambda: d.find_elements(By.CSS_SELECTOR, "#d-tree, #d-raw, #d-hex, #d-body .hint"), 15,
              "the body of #%d (%s)" % (wid, kind))
        if kind == "envelope":
            check(text(d, "d-title").startswith(s), "the source as text in the detail title")
            check(js(d, "const r = document.getElementById(arguments[0]); return [r.querySelector('.c-src').textContent,"
                        " r.querySelector('.c-ev').textContent];", "r%d" % wid) == [s, s],
                  "the hostile source and event type as text in the list row")
        elif kind == "html":
            check(text(d, "d-raw") == s, "a text/html body shown raw, as text")
            check(s in text(d, "d-headers"), "a hostile header value shown as text")
        elif kind == "bytes":
            hx = text(d, "d-hex") or ""
            check(hx.startswith("00000000  " + " ".join(s[j:j + 2] for j in range(0, 16, 2))),
                  "malformed UTF-8 as a hex dump: %r" % hx[:60])
        elif kind == "big":
            check(d.find_elements(By.ID, "d-tree") and "1,0" in text(d, "d-size"), "the 1 MB JSON body as a tree")
        elif kind == "bigenv":
            check(d.find_elements(By.ID, "d-tree") == [] and len(text(d, "d-raw")) == 256 * 1024,
                  "the 1 MB text payload raw, capped until Show all")
            d.find_element(By.CSS_SELECTOR, "#d-body button.btn").click()
            until(lambda: len(text(d, "d-raw")) == len(bigtxt), 10, "Show all")
        if kind in ("json", "envelope"):
            rt = d.find_elements(By.ID, "d-rawtoggle")
            if rt:
                rt[0].click()
                rt[0].click()
    # Copy as curl with quotes and with bytes that are not UTF-8: the command
    # must replay them byte for byte (the signature verifies, the delivery id
    # makes it a duplicate).
    replayed = 0
    for kind, wid, s in stored:
        if (kind == "html" and "'" in s) or kind == "bytes":
            replayed += 1
            cmd, out, rc = copied_curl(d, wid)
            check(rc == 0 and json.loads(out or "{}") == {"id": wid, "duplicate": True},
                  "copy as curl replays a %s body exactly: %r -> %r" % (kind, cmd[:80], out))
    html = [wid for kind, wid, s in stored if kind == "json"]
    if html:
        open_row(d, html[1] if len(html) > 1 else html[0])
        shot(d, os.path.join(shots, "xss-detail-1400x900.png"))
    d.find_element(By.ID, "tab-refused").click()
    until(lambda: "onerror" in js(d, "return document.getElementById('refused-list').textContent;"), 8,
          "the hostile unknown source in the Refused view")
    shot(d, os.path.join(shots, "refused-1400x900.png"))
    d.find_element(By.ID, "tab-list").click()
    until(lambda: shown(d, "app"), 5, "back to the list")
    tags = js(d, "return document.querySelectorAll('#main img, #main svg, #main script, #main iframe, #main style, #main link, #main a[href^=\"javascript\"], #main math').length;")
    check(tags == 0, "no element made from the corpus (%d)" % tags)
    sec = security_state(d)
    check(sec["xss"] is None, "the canary is never set (window.__xss = %r)" % sec["xss"])
    check(sec["alerts"] == 0 and no_alert(d), "no alert opened")
    check(sec["csp"] == [], "no CSP violation: %r" % sec["csp"])
    logs = severe_logs(d)
    check(logs == [], "no console errors: %r" % logs[:5])
    log("XSS corpus: %d rows opened, inert; %d hostile bodies replayed exactly by copy as curl" % (len(stored), replayed))


def step_revoked(d, base, hk, token2, admin):
    js(d, "document.getElementById('logout').click();")
    until(lambda: shown(d, "login"), 5, "the login form after logout")
    login(d, token2)
    d.get(base + "/ui?source=gh&event=pull_request")
    until(lambda: shown(d, "app") and row_ids(d), 10, "the filtered list as ui2")
    hk.revoke("ui2")
    d.find_element(By.ID, "r%d" % row_ids(d)[0]).click()
    until(lambda: shown(d, "login"), 10, "the login form after the token was revoked")
    msg = text(d, "login-msg")
    check("ended" in msg and "filters are kept" in msg, "the login form says the session ended: %r" % msg)
    q = query(d)
    check(q.get("source") == ["gh"] and q.get("event") == ["pull_request"], "the URL keeps the filters: %r" % q)
    login(d, admin)
    until(lambda: row_ids(d), 10, "the list after logging in again")
    check(d.find_element(By.ID, "f-source").get_attribute("value") == "gh" and
          d.find_element(By.ID, "f-event").get_attribute("value") == "pull_request", "the filters are back in the form")


def step_expired(d, tmp):
    """A second hookd whose sessions last 3 s, reached as localhost (its own
    cookies): the page goes back to the login form by itself at expiry.
    Also: the actions a read and a delete session may see."""
    hk = Hookd(tmp, "short", {"HOOKD_SESSION_TTL": "3s"})
    reader = hk.token("reader", "read")
    deleter = hk.token("deleter", "delete,read")
    hk.start()
    try:
        st, w = envelope(Client(hk.port), "zz", "e", '{"a":1}')
        check(st == 201, "a row on the short-session hookd")
        base = "http://localhost:%d" % hk.port
        d.get(base + "/ui?source=zz&state=none")
        login(d, reader)
        t = time.monotonic()
        open_row(d, w["id"])
        check(not d.find_elements(By.ID, "a-redeliver") and not d.find_elements(By.ID, "a-delete") and
              d.find_elements(By.ID, "a-curl"), "a read session sees neither Redeliver nor Delete")
        until(lambda: shown(d, "login"), 10, "the login form when the session expires")
        log("expired session: back to the login form %.1f s after login (TTL 3 s)" % (time.monotonic() - t))
        msg = text(d, "login-msg")
        check("expired" in msg, "the login form says the session expired: %r" % msg)
        q = query(d)
        check(q.get("source") == ["zz"] and q.get("state") == ["none"], "the URL keeps the filters: %r" % q)
        login(d, deleter)
        open_row(d, w["id"])
        check(not d.find_elements(By.ID, "a-redeliver") and d.find_elements(By.ID, "a-delete"),
              "a delete session sees Delete but not Redeliver")
    finally:
        rc = hk.stop()
        check(rc == 0, "the short-session hookd exits 0 (got %s)\n%s" % (rc, hk.stderr()))


def step_heap(d, base, hk_port):
    d.get(base + "/ui")
    until(lambda: shown(d, "app"), 10, "the app")
    wait_live(d)

    def post_range(n0, n1):
        last = [0]

        def work(k):
            c = Client(hk_port)
            for i in range(n0 + k, n1, 8):
                st, data = c.req("POST", "/hooks/bulk", b'{"n":%d,"pad":"%s"}' % (i, b"x" * 200),
                                 {"Content-Type": "application/json", "X-Event": "tick"})
                if st != 201:
                    raise AssertionError("bulk post %d: %s %r" % (i, st, data))
                last[0] = max(last[0], json.loads(data)["id"])
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            for f in [ex.submit(work, k) for k in range(8)]:
                f.result()
        return last[0]

    def heap():
        return js(d, "window.gc(); window.gc(); return performance.memory.usedJSHeapSize;")

    top = lambda: js(d, "return Math.max(0, ...Array.from(document.querySelectorAll('#spacer .row')).map(e => +e.dataset.id));")
    h0 = heap()
    t = time.monotonic()
    last = post_range(0, 1000)
    until(lambda: top() >= last, 30, "1,000 deliveries in the list")
    time.sleep(0.5)
    h1 = heap()
    last = post_range(1000, 10000)
    dt = time.monotonic() - t
    until(lambda: top() >= last, 60, "10,000 deliveries in the list")
    time.sleep(0.5)
    h10 = heap()
    dom = js(d, "return document.querySelectorAll('#spacer .row').length;")
    status = text(d, "list-status")
    log("heap: %.2f MB before, %.2f MB after 1,000, %.2f MB after 10,000 (%.1f s to post them; %d rows in the DOM; %s)"
        % (h0 / 1e6, h1 / 1e6, h10 / 1e6, dt, dom, status))
    # Between 1,000 and 10,000 rows the page may only grow from 1,000 to its
    # cap of 2,000 summaries (~0.1 MB); keeping every row, or any payload,
    # would add a megabyte or more.
    check(h10 <= 1.25 * h1 + 0.5e6, "the JS heap stays flat: %.2f MB after 10,000 vs %.2f MB after 1,000"
          % (h10 / 1e6, h1 / 1e6))
    check(dom <= 80, "only the rows near the viewport are in the DOM (%d)" % dom)
    check(status.startswith("2,000 loaded"), "at most 2,000 rows kept in memory: %r" % status)
    return last


def step_paging(d, last):
    # Scroll to the bottom until rows far below the 2,000 kept are paged in.
    lowest = 0
    for _ in range(40):
        js(d, "const l = document.getElementById('list'); l.scrollTop = l.scrollHeight;")
        time.sleep(0.15)
        ids = row_ids(d)
        if ids:
            lowest = ids[-1]
        if lowest and lowest < last - 5000:
            break
    dom = js(d, "return document.querySelectorAll('#spacer .row').length;")
    log("paging: scrolled down to #%d (newest #%d), %d rows in the DOM" % (lowest, last, dom))
    check(lowest and lowest < last - 5000, "history pages in by keyset while scrolling (reached #%d)" % lowest)
    check(dom <= 80, "the DOM stays small while paging (%d)" % dom)
    check(shown(d, "banner"), "a banner offers the way back to the newest rows")
    d.find_element(By.ID, "banner").click()
    until(lambda: row_ids(d) and row_ids(d)[0] == last, 10, "back to the newest")


def main():
    if webdriver is None or not CHROMIUM or not CHROMEDRIVER:
        print("SKIP: needs chromium, chromium-driver and python3-selenium")
        return 77
    corpus = json.load(open(os.path.join(HERE, "xss_corpus.json"), encoding="utf-8"))
    shots = os.path.join(BUILD, "ui-shots")
    os.makedirs(shots, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="hookd-ui-")
    sink = hk = d = None
    try:
        sink = Sink(tmp)
        srcs = os.path.join(tmp, "sources.yaml")
        with open(srcs, "w") as f:
            f.write("sources:\n"
                    "  - {name: gh, scheme: github, secrets: [{env: UI_GH_SECRET}], headers: [x-evil]}\n"
                    "  - name: bulk\n    scheme: none\n    eventTypeHeader: x-event\n    forward: false\n")
        hk = Hookd(tmp, "main", {"HOOKD_SOURCES": srcs, "UI_GH_SECRET": GH_SECRET,
                                 "HOOKD_FORWARD_URL": "http://127.0.0.1:%d/events" % sink.port,
                                 "HOOKD_MAX_BODY_BYTES": "2097152", "HOOKD_STREAM_BUFFER": "16MiB"})
        admin = hk.token("ui", "admin")
        token2 = hk.token("ui2", "admin")
        hk.start()
        base = "http://127.0.0.1:%d" % hk.port
        cl = Client(hk.port)
        log("hookd on %s, sink on %d" % (base, sink.port))
        d = browser(tmp)

        fcp = step_paint(d, base)
        login(d, admin)
        wait_live(d)
        errs = severe_logs(d, allow=["/api/sessions/current - Failed to load resource: the server responded with a status of 401"])
        check(errs == [], "no console error but the expected 401 of the first session check: %r" % errs)
        aid, bid, body, lat = step_live(d, cl)
        st, arow = cl.req("GET", "/api/webhooks/%d" % aid, headers={"Authorization": "Bearer " + admin})
        step_filters(d, cl, aid, bid, json.loads(arow)["receivedAt"])
        step_detail(d, bid, body)
        step_keyboard(d)
        copy_id = step_curl(d, base, aid, bid)
        step_redeliver(d, sink, bid)
        step_refused(d, cl)
        if copy_id:
            step_delete(d, cl, admin, copy_id)

        open_row(d, bid)
        for w, h in ((1400, 900), (375, 800)):
            viewport(d, w, h)
            shot(d, os.path.join(shots, "detail-%dx%d.png" % (w, h)))
            if w == 375:
                check(not shown(d, "list"), "narrow: the detail stacks over the list")
            js(d, "document.getElementById('d-close').click();")
            until(lambda: not shown(d, "detail"), 5, "the detail closed")
            shot(d, os.path.join(shots, "list-%dx%d.png" % (w, h)))
            check(js(d, "return document.documentElement.scrollWidth <= window.innerWidth;"),
                  "no horizontal overflow at %d px" % w)
            if w == 375:
                viewport(d, 360, 740)
                check(js(d, "return document.documentElement.scrollWidth <= window.innerWidth;"),
                      "no horizontal overflow at 360 px")
                viewport(d, w, h)
            if w == 1400:
                open_row(d, bid)
        viewport(d, 1400, 900)
        open_row(d, bid)
        js(d, "document.getElementById('d-body').scrollIntoView();")
        shot(d, os.path.join(shots, "detail-body-1400x900.png"))
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        check(js(d, "return getComputedStyle(document.body).backgroundColor;") != "rgb(246, 248, 250)",
              "prefers-color-scheme: dark changes the colours")
        shot(d, os.path.join(shots, "detail-dark-1400x900.png"))
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        js(d, "document.getElementById('d-close').click();")

        step_xss(d, cl, corpus, shots)
        step_revoked(d, base, hk, token2, admin)
        step_expired(d, tmp)
        d.get(base + "/ui")
        if not shown(d, "app"):
            login(d, admin)
        last = step_heap(d, base, hk.port)
        step_paging(d, last)
        sec = security_state(d)
        check(sec["csp"] == [] and sec["alerts"] == 0 and sec["xss"] is None, "still no CSP violation, alert or canary")
        log("summary: FCP %.1f ms; live latency %s ms" % (fcp, ", ".join("%.1f" % x for x in lat)))
    except Exception as e:
        failures.append(repr(e))
        log("FAIL: %s: %s" % (type(e).__name__, str(e).split("\nStacktrace")[0]))
        if d:
            try:
                p = os.path.join(shots, "failure.png")
                d.save_screenshot(p)
                log("screenshot at the failure: " + p)
                for e in d.get_log("browser"):
                    log("browser: %s" % e["message"][:300])
            except Exception:
                pass
    finally:
        if d:
            try:
                d.quit()
            except Exception as e:
                log("chromedriver quit: %r" % e)
        if hk:
            rc = hk.stop()
            check(rc == 0, "hookd exits 0 on SIGTERM (got %s)\n%s" % (rc, hk.stderr()))
        if sink:
            sink.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    log("%d failure(s)" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: MIT
"""What ingress costs (docs/ingress.md): POST /hooks/stripe with a 2 KB
Stripe-signed body next to the unsigned POST /api/webhooks with a 2 KB
envelope, on fresh servers of the same build and store, one right after the
other, at the same connections and duration as the main mix.

The source is one Stripe source in a sources file (HOOKD_SOURCES) whose
secret comes from the environment (BENCH_STRIPE_SECRET, a fresh throwaway
whsec_ per run, never written into the JSON or the logs). A Stripe signature
covers "t.body" only, so the body is signed once here and wrk sends it with
the same Stripe-Signature every time, while each request has its own
delivery id (X-Bench-Delivery, the source's deliveryIdHeader): every request
is a new row, and the server still computes the MAC over the body and reads
the event type from the JSON each time (bench/wrk/ingress.lua). The baseline
is bench/wrk/envelope2k.lua. Both servers get the same sources file, so the
request is the only difference.

The issue's targets, in the same run: ingress req/s >= 0.9x the envelope's,
at most 5 us more server CPU per request, p99 <= 20 ms. A point with any
response other than 201 (a refusal, or a 200 that says "duplicate") fails
the measurement: the figures are of stored deliveries only."""

import copy
import hashlib
import hmac
import http.client
import json
import os
import secrets
import time
import uuid

from . import jsonout, measure

BODY_BYTES = 2048
SECRET_ENV = "BENCH_STRIPE_SECRET"
DELIVERY_HEADER = "x-bench-delivery"
LIMITS = {"rpsRatioMin": 0.9, "cpuUsDeltaMax": 5.0, "p99MsMax": 20.0}
# Long enough for the quiet wait, the baseline and the ingress point after
# signing; the timestamp check still runs on every request.
TOLERANCE = "1h"

SOURCES_YAML = """\
# Written by bench/hkbench/ingress.py for one run of the ingress profile.
sources:
  - name: stripe
    scheme: stripe
    secrets: [{{env: {env}}}]
    tolerance: {tolerance}
    deliveryIdHeader: {header}
"""


def stripe_event(note=""):
    """A charge.succeeded event as Stripe sends it (API version 2024-06-20),
    with `note` in the charge's metadata: the padding."""
    return {
        "id": "evt_3QbEnchHookd0000000001",
        "object": "event",
        "api_version": "2024-06-20",
        "created": 1764590400,
        "data": {
            "object": {
                "id": "ch_3QbEnchHookd0000000001",
                "object": "charge",
                "amount": 2000,
                "amount_captured": 2000,
                "amount_refunded": 0,
                "balance_transaction": "txn_3QbEnchHookd0000000001",
                "billing_details": {
                    "address": {"city": "Berlin", "country": "DE", "line1": "Unter den Linden 1", "line2": None,
                                "postal_code": "10117", "state": None},
                    "email": "jenny.rosen@example.com",
                    "name": "Jenny Rosen",
                    "phone": None,
                },
                "calculated_statement_descriptor": "HOOKD BENCH",
                "captured": True,
                "created": 1764590399,
                "currency": "eur",
                "customer": "cus_QbEnchHookd0001",
                "description": "Order 1001",
                "livemode": False,
                "metadata": {"order_id": "1001", "note": note},
                "outcome": {"network_status": "approved_by_network", "reason": None, "risk_level": "normal",
                            "risk_score": 32, "seller_message": "Payment complete.", "type": "authorized"},
                "paid": True,
                "payment_intent": "pi_3QbEnchHookd0000000001",
                "payment_method": "pm_1QbEnchHookd0000000001",
                "payment_method_details": {
                    "card": {"brand": "visa", "country": "US", "exp_month": 12, "exp_year": 2030,
                             "funding": "credit", "last4": "4242", "network": "visa"},
                    "type": "card",
                },
                "receipt_email": "jenny.rosen@example.com",
                "refunded": False,
                "status": "succeeded",
            }
        },
        "livemode": False,
        "pending_webhooks": 1,
        "request": {"id": "req_QbEnchHookd0001", "idempotency_key": "5b3c1e2a-7d4f-4c8e-9a61-0f2d8b7e4c10"},
        "type": "charge.succeeded",
    }


def _pad_to(make, size, what):
    """make(pad) -> bytes whose length grows by one per pad character;
    the bytes with the pad that makes them exactly `size` long."""
    base = make("")
    if len(base) > size:
        raise ValueError(f"{what} is {len(base)} bytes without padding, more than {size}")
    # Letters and spaces: no escaping, so one character is one byte.
    filler = ("Thank you for your order. " * (size // 26 + 1))[:size - len(base)]
    out = make(filler)
    assert len(out) == size, (len(out), size)
    return out


def stripe_body(size=BODY_BYTES):
    """The Stripe event, pretty-printed as Stripe sends it, exactly `size` bytes."""
    return _pad_to(lambda pad: json.dumps(stripe_event(pad), indent=2).encode("ascii"), size, "the Stripe event")


def envelope_body(size=BODY_BYTES):
    """The baseline's POST /api/webhooks body, exactly `size` bytes: the same
    event, compact, as the envelope's payload string, padded."""
    event = json.dumps(stripe_event(), separators=(",", ":"))
    return _pad_to(lambda pad: json.dumps({"source": "stripe", "eventType": "charge.succeeded",
                                           "payload": event + pad}, separators=(",", ":")).encode("ascii"),
                   size, "the envelope")


def stripe_signature(secret, t, body):
    """Stripe-Signature for `body` at unix time `t`: HMAC-SHA256 keyed with the
    whole whsec_ string over "t.body"."""
    mac = hmac.new(secret.encode("ascii"), str(t).encode("ascii") + b"." + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={mac}"


def sources_yaml():
    return SOURCES_YAML.format(env=SECRET_ENV, tolerance=TOLERANCE, header=DELIVERY_HEADER)


class Files:
    """The run's throwaway secret and the files the two points read."""

    def __init__(self, directory):
        os.makedirs(directory, exist_ok=True)
        self.secret = "whsec_" + secrets.token_hex(24)
        self.stripe = os.path.join(directory, "stripe-2k.json")
        self.envelope = os.path.join(directory, "envelope-2k.json")
        self.sources = os.path.join(directory, "sources.yaml")
        self.stripe_body = stripe_body()
        for path, data in ((self.stripe, self.stripe_body), (self.envelope, envelope_body()),
                           (self.sources, sources_yaml().encode())):
            with open(path, "wb") as f:
                f.write(data)

    def signature(self):
        return stripe_signature(self.secret, int(time.time()), self.stripe_body)


def ingress_target(t, files):
    """The target with the sources file; the name gives it a scratch dir of its own."""
    it = copy.copy(t)
    it.env = dict(t.env, HOOKD_SOURCES=files.sources, **{SECRET_ENV: files.secret})
    it.name = t.name + "-ingress"
    return it


def post(port, path, body, headers, timeout=5.0):
    """(status, body text) of one POST on a fresh connection."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", path, body=body, headers=headers)
        r = c.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        c.close()


def expect_created(what, status, body):
    """Raise with the server's stated reason unless it answered 201 with
    {"duplicate": false} (hookd's answer to a new delivery) or, for the
    envelope, 201 with a row."""
    if status != 201:
        try:
            reason = json.loads(body).get("reason") or json.loads(body).get("title")
        except (ValueError, AttributeError):
            reason = None
        raise RuntimeError(f"{what} answered {status}" + (f" ({reason})" if reason else f": {body[:200]!r}"))
    try:
        doc = json.loads(body)
    except ValueError:
        raise RuntimeError(f"{what} answered 201 with a body that is not JSON: {body[:200]!r}") from None
    if not isinstance(doc, dict) or "id" not in doc or doc.get("duplicate") is True:
        raise RuntimeError(f"{what} answered 201 but not with a new row: {body[:200]!r}")


def check_point(p, what):
    """A load point counts only when every response was a 201 (non2xx
    includes ingress.lua's 2xxOther) and wrk saw no socket error."""
    bad = []
    if p.get("non2xx"):
        bad.append(f"{p['non2xx']} responses other than 201 (status classes {p.get('statusClasses')})")
    if p.get("socketErrorsTotal"):
        bad.append(f"{p['socketErrorsTotal']} socket errors ({p.get('socketErrors')})")
    if p.get("requests", 0) <= 0:
        bad.append("no request completed")
    if bad:
        raise RuntimeError(f"{what}: " + "; ".join(bad))


def _num(v):
    return v if jsonout.is_number(v) else None


def summarize(envelope, ingress, limits=LIMITS):
    """The comparison of the two points: rpsRatio = ingress/envelope,
    cpuUsDelta = ingress - envelope (server CPU per request), the ingress
    p99, and which of the issue's targets they meet (None: not measured)."""
    e_rps, i_rps = _num(envelope.get("rps")), _num(ingress.get("rps"))
    e_cpu, i_cpu = _num(envelope.get("serverCpuUsPerRequest")), _num(ingress.get("serverCpuUsPerRequest"))
    p99 = _num(ingress.get("p99Ms"))
    ratio = i_rps / e_rps if e_rps and i_rps is not None else None
    delta = i_cpu - e_cpu if e_cpu is not None and i_cpu is not None else None
    met = {
        "rpsRatio": None if ratio is None else ratio >= limits["rpsRatioMin"],
        "cpuUsDelta": None if delta is None else delta <= limits["cpuUsDeltaMax"],
        "p99Ms": None if p99 is None else p99 <= limits["p99MsMax"],
    }
    met["all"] = None if None in met.values() else all(met.values())
    out = {"rpsRatio": ratio, "cpuUsDelta": delta, "p99Ms": p99, "envelopeP99Ms": _num(envelope.get("p99Ms")),
           "limits": dict(limits), "targetsMet": met}
    e_db, i_db = _num(envelope.get("dbCpuUsPerRequest")), _num(ingress.get("dbCpuUsPerRequest"))
    if e_db is not None and i_db is not None:
        out["dbCpuUsDelta"] = i_db - e_db
    return out


def measure_target(cfg, t, db, conns, duration):
    """The two points on target `t`: {"status": "ok", "envelope": POINT,
    "ingress": POINT, the summary}, or {"status": "failed", "reason", and
    the points measured before the failure}."""
    out = {"status": "ok", "variant": t.variant, "store": t.store, "connections": conns, "durationS": duration}
    try:
        files = Files(os.path.join(cfg.work, t.name + "-ingress-files"))
        it = ingress_target(t, files)
        json_ct = {"Content-Type": "application/json"}

        def envelope_ready(port):
            expect_created("POST /api/webhooks (2 KB envelope)", *post(port, "/api/webhooks",
                                                                        envelope_body(), json_ct))
            return ()

        env_p = measure.load_point(cfg, it, "envelope2k.lua", "mix", conns, duration, db=db,
                                   args=(files.envelope, cfg.bucket_ms), label="ingress baseline/envelope 2 KB",
                                   post_ready=envelope_ready)
        env_p["path"] = "/api/webhooks"
        out["envelope"] = env_p
        check_point(env_p, "POST /api/webhooks (2 KB envelope)")
        sig = files.signature()

        def ingress_ready(port):
            headers = {"Content-Type": "application/json; charset=utf-8", "Stripe-Signature": sig,
                       DELIVERY_HEADER: "probe-" + uuid.uuid4().hex}
            expect_created("POST /hooks/stripe", *post(port, "/hooks/stripe", files.stripe_body, headers))
            return ()

        ing_p = measure.load_point(cfg, it, "ingress.lua", "mix", conns, duration, db=db,
                                   args=(sig, files.stripe, cfg.bucket_ms), label="ingress/stripe 2 KB",
                                   post_ready=ingress_ready)
        ing_p["path"] = "/hooks/stripe"
        out["ingress"] = ing_p
        check_point(ing_p, "POST /hooks/stripe (2 KB, Stripe-signed)")
    except Exception as e:  # noqa: BLE001 - recorded, the run goes on
        out["status"] = "failed"
        out["reason"] = f"{type(e).__name__}: {e}"[:1000]
        return out
    out.update(summarize(env_p, ing_p))
    return out


def wanted(t, variants):
    """Is target `t` one the profile runs on (a hookd serving the API, of
    the given variants: a comma list, or 'all')?"""
    return t.kind == "hookd" and t.api and (variants == "all" or t.variant in variants.split(","))


def section(conns, duration, variants):
    """doc["ingress"] before any target ran."""
    return {"status": "ok", "scheme": "stripe", "path": "/hooks/stripe", "baselinePath": "/api/webhooks",
            "bodyBytes": BODY_BYTES, "connections": conns, "durationS": duration, "variants": variants,
            "limits": dict(LIMITS), "targets": {},
            "note": "POST /hooks/stripe, one 2 KB Stripe event signed once (Stripe-Signature t=,v1=), a new "
                    "delivery id per request (bench/wrk/ingress.lua), vs unsigned POST /api/webhooks with a "
                    "2 KB envelope (bench/wrk/envelope2k.lua); fresh servers of the same build, store and "
                    "sources file, one after the other"}


def skipped(reason):
    return {"status": "skipped", "reason": reason}


def finish(sec):
    """After the targets: a profile that ran on none says why."""
    if sec.get("status") == "ok" and not sec.get("targets"):
        return skipped(f"no hookd target of the variants {sec.get('variants')!r} ran")
    return sec


POINT_KEYS = dict(jsonout.MIX_POINT_KEYS, statusClasses="dict")
TARGET_KEYS = {
    "store": "str",
    "connections": "num",
    "rpsRatio": "num",
    "cpuUsDelta": "num",
    "p99Ms": "num",
    "targetsMet.rpsRatio": "bool",
    "targetsMet.cpuUsDelta": "bool",
    "targetsMet.p99Ms": "bool",
    "targetsMet.all": "bool",
}


def check_complete(doc):
    """Problems with doc["ingress"], as strings ([] when complete): it may
    be skipped with a reason; a failed target, a missing figure or a point
    with a response other than 201 is a problem."""
    sec = doc.get("ingress")
    if not isinstance(sec, dict):
        return ["ingress: missing"]
    if sec.get("status") == "skipped":
        return [] if isinstance(sec.get("reason"), str) else ["ingress: skipped without a reason"]
    if sec.get("status") != "ok":
        return [f"ingress: {sec.get('status')}: {str(sec.get('reason'))[:200]}"]
    problems = []
    if not isinstance(sec.get("targets"), dict) or not sec["targets"]:
        problems.append("ingress.targets: none")
    for name, r in (sec.get("targets") or {}).items():
        where = f"ingress.targets.{name}."
        if not isinstance(r, dict) or r.get("status") != "ok":
            r = r if isinstance(r, dict) else {}
            problems.append(f"ingress.targets.{name}: {r.get('status')}: {str(r.get('reason'))[:200]}")
            continue
        jsonout._check(r, TARGET_KEYS, where, problems)
        for side in ("envelope", "ingress"):
            p = r.get(side) if isinstance(r.get(side), dict) else {}
            jsonout._check(p, POINT_KEYS, f"{where}{side}.", problems)
            if jsonout.is_number(p.get("non2xx")) and p["non2xx"] != 0:
                problems.append(f"{where}{side}.non2xx: {p['non2xx']}, expected 0")
    return problems

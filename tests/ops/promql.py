# SPDX-License-Identifier: MIT
"""The selectors of a PromQL expression, checked against what a real hookd
exposes: a small reader of PromQL (not a full parser: promtool checks the
syntax) and the scrape it is compared with. Used by test_ops.py.

What is checked, per expression:
  - every metric named is a sample name of the scrape (a histogram only as
    its _bucket, _sum and _count), or `up` (Prometheus' own);
  - every label in a matcher is on that metric (`le` on _bucket only);
    `job` and `instance`, which Prometheus adds to every series, anywhere;
  - every label in by/without/on/ignoring/group_left/group_right is on one
    of the expression's metrics;
  - a matcher's value is one the metric has in the scrape; for labels whose
    values depend on traffic (an HTTP status, a source name, the ingress
    refusal reasons) one of the values the label can take; a regex must
    compile, each literal of an alternation like "a|b" counts as a value,
    and any other regex must match at least one possible value;
  - functions are PromQL's (label_replace, label_join and count_values, which
    invent labels, are refused: the label check could not follow them).
"""
import re

TARGET_LABELS = {"job", "instance"}

FUNCTIONS = {
    "abs", "absent", "absent_over_time", "avg_over_time", "ceil", "changes", "clamp", "clamp_max",
    "clamp_min", "count_over_time", "day_of_month", "day_of_week", "day_of_year", "days_in_month", "delta",
    "deriv", "exp", "floor", "histogram_quantile", "holt_winters", "hour", "idelta", "increase", "irate",
    "last_over_time", "ln", "log10", "log2", "max_over_time", "min_over_time", "minute", "month",
    "predict_linear", "present_over_time", "quantile_over_time", "rate", "resets", "round", "scalar", "sgn",
    "sort", "sort_desc", "sqrt", "stddev_over_time", "stdvar_over_time", "sum_over_time", "time", "timestamp",
    "vector", "year",
}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "bottomk", "topk", "quantile"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left",
            "group_right", "atan2"}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
NUMBERS = {"inf", "nan"}

TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<num>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<op>==|!=|=~|!~|>=|<=|[-+*/%^<>=(){}\[\],@])
""", re.X)
DURATION = re.compile(r"\s*-?(?:\d+(?:ms|[smhdwy]))+")

# Values of labels that depend on traffic: what they can be.
HTTP_OUTCOMES = {"INFORMATIONAL", "SUCCESS", "REDIRECTION", "CLIENT_ERROR", "SERVER_ERROR", "UNKNOWN"}
HTTP_METHODS = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "UNKNOWN"}
HTTP_STATUSES = {str(s) for s in range(100, 600)}
# docs/ingress.md, Refusals (test_ops.py checks that src/ still spells each).
INGRESS_REASONS = {"missing_header", "malformed_header", "timestamp_out_of_tolerance", "no_matching_signature",
                   "no_secret", "unknown_source", "body_too_large", "unsupported_media_type", "rate_limited",
                   "ingress_busy"}
SOURCE_NAME = re.compile(r"[a-z0-9_-]{1,64}|other|\(unknown\)")


class Scrape:
    """A Prometheus text exposition: sample name -> label -> values seen."""

    SAMPLE = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$")
    LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)')

    def __init__(self, text):
        self.types = {}
        self.samples = {}
        self.values = {}     # (sample name, label set as a frozenset of items) -> value
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            if line.startswith("#"):
                parts = line.split(None, 3)
                if len(parts) >= 4 and parts[1] == "TYPE":
                    self.types[parts[2]] = parts[3].strip()
                continue
            m = self.SAMPLE.match(line)
            if not m:
                raise ValueError(f"scrape line {n} is not a sample: {line!r}")
            name, body, value = m.groups()
            labels = {}
            pos = 0
            body = body or ""
            while pos < len(body):
                lm = self.LABEL.match(body, pos)
                if not lm:
                    raise ValueError(f"scrape line {n}: bad labels: {line!r}")
                labels[lm.group(1)] = unescape(lm.group(2))
                pos = lm.end()
            per = self.samples.setdefault(name, {})
            for k, v in labels.items():
                per.setdefault(k, set()).add(v)
            self.values[(name, frozenset(labels.items()))] = float(value)

    def value(self, name, **labels):
        return self.values.get((name, frozenset(labels.items())))

    def families(self):
        """Family names: a histogram's, not its _bucket/_sum/_count."""
        out = set()
        for name in self.samples:
            for suffix in ("_bucket", "_sum", "_count"):
                base = name[: -len(suffix)]
                if name.endswith(suffix) and self.types.get(base) == "histogram":
                    out.add(base)
                    break
            else:
                out.add(name)
        return out


def unescape(s):
    return re.sub(r'\\(["\'\\nrt])', lambda m: {"n": "\n", "r": "\r", "t": "\t"}.get(m.group(1), m.group(1)), s)


class Selector:
    def __init__(self, name, matchers):
        self.name = name
        self.matchers = matchers      # [(label, op, value)]

    def __repr__(self):
        inner = ", ".join(f'{k}{op}"{v}"' for k, op, v in self.matchers)
        return f"{self.name}{{{inner}}}"


def tokens(expr):
    pos = 0
    out = []
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m:
            raise SyntaxError(f"unexpected character {expr[pos]!r} at {pos} in: {expr}")
        kind = m.lastgroup
        text = m.group()
        if kind not in ("ws", "comment"):
            out.append((kind, text, m.start()))
        pos = m.end()
        if kind == "op" and text == "[":
            # A range or subquery: durations only, up to the bracket.
            end = expr.find("]", pos)
            if end < 0:
                raise SyntaxError(f"unclosed [ in: {expr}")
            pos = end + 1
            out.append(("op", "]", end))
        elif kind == "ident" and text == "offset":
            d = DURATION.match(expr, pos)
            if not d:
                raise SyntaxError(f"offset without a duration in: {expr}")
            pos = d.end()
    return out


def read(expr):
    """Selectors, grouping labels and functions of one expression."""
    toks = tokens(expr)
    selectors, grouping, functions = [], [], []
    i = 0

    def peek(k):
        return toks[k] if k < len(toks) else (None, None, None)

    def matchers(k):
        """Reads {a="x", b=~"y"} from toks[k] == '{'; returns (list, next index)."""
        out = []
        k += 1
        while True:
            kind, text, _ = peek(k)
            if text == "}":
                return out, k + 1
            if kind != "ident":
                raise SyntaxError(f"expected a label name, got {text!r} in: {expr}")
            label = text
            okind, op, _ = peek(k + 1)
            if op not in ("=", "!=", "=~", "!~"):
                raise SyntaxError(f"expected a matcher operator after {label}, got {op!r} in: {expr}")
            skind, s, _ = peek(k + 2)
            if skind != "str":
                raise SyntaxError(f"expected a string after {label}{op} in: {expr}")
            out.append((label, op, unescape(s[1:-1])))
            k += 3
            if peek(k)[1] == ",":
                k += 1

    while i < len(toks):
        kind, text, _ = toks[i]
        if kind == "ident":
            low = text.lower()
            nxt = peek(i + 1)[1]
            if text in GROUPING:
                i += 1
                if peek(i)[1] == "(":
                    i += 1
                    while peek(i)[1] != ")":
                        k2, t2, _ = peek(i)
                        if k2 == "ident":
                            grouping.append(t2)
                        elif t2 != ",":
                            raise SyntaxError(f"unexpected {t2!r} in a label list in: {expr}")
                        i += 1
                    i += 1
                continue
            if text in KEYWORDS or low in NUMBERS:
                i += 1
                continue
            if nxt == "(" or (text in AGGREGATIONS and nxt in ("by", "without")):
                functions.append(text)
                i += 1
                continue
            if nxt == "{":
                m, i = matchers(i + 1)
                selectors.append(Selector(text, m))
                continue
            selectors.append(Selector(text, []))
            i += 1
            continue
        if kind == "op" and text == "{":
            m, i = matchers(i)
            names = [v for k, op, v in m if k == "__name__" and op == "="]
            selectors.append(Selector(names[0] if names else None, [x for x in m if x[0] != "__name__"]))
            continue
        i += 1
    return selectors, grouping, functions


def _universe(scrape, name, label):
    """(values, pattern): the values `label` of `name` can take."""
    if label == "source":
        return None, SOURCE_NAME
    if name.startswith("http_server_requests_seconds_"):
        fixed = {"status": HTTP_STATUSES, "outcome": HTTP_OUTCOMES, "method": HTTP_METHODS}
        if label in fixed:
            return fixed[label], None
    if name == "hookd_ingress_rejected_total" and label == "reason":
        return INGRESS_REASONS, None
    return scrape.samples.get(name, {}).get(label, set()), None


LITERALS = re.compile(r"[A-Za-z0-9_/{}\-]+(?:\|[A-Za-z0-9_/{}\-]+)*")


def _value_errors(scrape, name, label, op, value):
    values, pattern = _universe(scrape, name, label)

    def known(v):
        return pattern.fullmatch(v) if pattern else v in values

    where = f"{name}{{{label}{op}\"{value}\"}}"
    if op in ("=", "!="):
        if value and not known(value):
            return [f"{where}: hookd has no {label}=\"{value}\" on {name}"]
        return []
    try:
        rx = re.compile(f"^(?:{value})$")
    except re.error as e:
        return [f"{where}: bad regex: {e}"]
    if LITERALS.fullmatch(value):
        return [f"{where}: hookd has no {label}=\"{v}\" on {name}" for v in value.split("|") if not known(v)]
    if pattern:
        return []
    if not any(rx.match(v) for v in values):
        return [f"{where}: the regex matches no {label} hookd has on {name} ({', '.join(sorted(values))})"]
    return []


def check(expr, scrape):
    """Every problem with `expr`'s selectors against `scrape`, as strings."""
    try:
        selectors, grouping, functions = read(expr)
    except SyntaxError as e:
        return [str(e)]
    errors = []
    for f in functions:
        if f not in FUNCTIONS and f not in AGGREGATIONS:
            errors.append(f"{f}(): not a function this check follows (it would invent or hide labels)")
    labels_here = set(TARGET_LABELS)
    for s in selectors:
        if s.name is None:
            errors.append(f"{s}: a selector without a metric name")
            continue
        if s.name == "up":
            have = set()
        elif s.name in scrape.samples:
            have = set(scrape.samples[s.name])
        else:
            hint = ""
            if scrape.types.get(s.name) == "histogram":
                hint = " (a histogram: use its _bucket, _sum or _count)"
            errors.append(f"{s.name}: hookd exposes no such metric{hint}")
            continue
        labels_here |= have
        for label, op, value in s.matchers:
            if label in TARGET_LABELS:
                if op in ("=~", "!~"):
                    try:
                        re.compile(value)
                    except re.error as e:
                        errors.append(f"{s}: bad regex: {e}")
                continue
            if label not in have:
                errors.append(f"{s.name}: hookd has no label {label} on it (it has: "
                              f"{', '.join(sorted(have)) or 'none'})")
                continue
            if label == "le":
                continue
            errors += _value_errors(scrape, s.name, label, op, value)
    for g in grouping:
        if g not in labels_here:
            errors.append(f"by/on ({g}): no metric of this expression has the label {g}")
    return errors


def check_series(series, scrape):
    """A promtool test input series ('name{a="x"}'): the metric and label
    names only (unit tests use values hookd has not seen, a backend, a status)."""
    selectors, _, _ = read(series)
    if len(selectors) != 1:
        return [f"{series}: expected one series"]
    s = selectors[0]
    if s.name != "up" and s.name not in scrape.samples:
        return [f"{s.name}: hookd exposes no such metric"]
    have = set(scrape.samples.get(s.name, {})) | TARGET_LABELS
    return [f"{s.name}: hookd has no label {k} on it" for k, _, _ in s.matchers if k not in have]

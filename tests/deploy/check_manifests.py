# SPDX-License-Identifier: MIT
"""The manifests `hookd manifest` prints: parsed as YAML (python3-yaml) and
checked field by field for what Knative and Kubernetes need, and the
committed deploy/ files equal to the generated output for the default image.
Also the systemd units (systemd-analyze verify, and security exposure at
most 1.0) and the build context's ignore files (.dockerignore is
.containerignore).

Environment: HOOKD_BIN (the binary), SRC (the source tree)."""
import os
import re
import shutil
import subprocess
import sys
import unittest

import yaml

BIN = os.environ["HOOKD_BIN"]
SRC = os.environ["SRC"]
VERSION = subprocess.run([BIN, "--version"], capture_output=True, text=True, check=True).stdout.split()[1]
IMAGE = f"dev.local/hookd:{VERSION}"


def manifest(*args, rc=0):
    p = subprocess.run([BIN, "manifest", *args], capture_output=True, text=True, timeout=10)
    assert p.returncode == rc, f"hookd manifest {' '.join(args)}: exit {p.returncode}, stderr: {p.stderr}"
    return p


def docs(*args):
    return list(yaml.safe_load_all(manifest(*args).stdout))


def env_of(c):
    return {e["name"]: e for e in c["env"]}


def bytes_of(q):
    """A Kubernetes quantity of bytes (such as 128Mi, 1Gi, 500M) as a number."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?", q)
    assert m, q
    unit = {None: 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    return float(m.group(1)) * unit[m.group(2)]


class Common:
    """Checks shared by the Knative container and the Deployment's."""

    def check_container(self, c, port_name):
        self.assertEqual(c["image"], IMAGE)
        self.assertEqual(c["ports"], [dict(name=port_name, containerPort=8080, **({} if port_name == "http1" else {"protocol": "TCP"}))])
        env = env_of(c)
        self.assertEqual(env["HOOKD_SQLITE_PATH"]["value"], "/data/hookd.db")
        self.assertRegex(env["HOOKD_DRAIN_TIMEOUT"]["value"], r"^\d+s$")
        ref = env["DATABASE_URL"]["valueFrom"]["secretKeyRef"]
        self.assertEqual(ref, {"name": "hookd-db", "key": "DATABASE_URL", "optional": True})
        self.assertNotIn("value", env["DATABASE_URL"])
        for probe, path in (("readinessProbe", "/q/health/ready"), ("livenessProbe", "/q/health/live"),
                            ("startupProbe", "/q/health/started")):
            self.assertEqual(c[probe]["httpGet"], {"path": path, "port": 8080}, probe)
        res = c["resources"]
        for k in ("requests", "limits"):
            self.assertIn("memory", res[k])
        self.assertTrue(res["requests"]["memory"].endswith("Mi"))
        sc = c["securityContext"]
        self.assertIs(sc["runAsNonRoot"], True)
        self.assertEqual(sc["runAsUser"], 65532)
        self.assertIs(sc["readOnlyRootFilesystem"], True)
        self.assertIs(sc["allowPrivilegeEscalation"], False)
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
        self.assertEqual(sc["seccompProfile"], {"type": "RuntimeDefault"})
        self.assertEqual(c["volumeMounts"], [{"name": "data", "mountPath": "/data"}])

    def check_volumes(self, spec):
        self.assertEqual(len(spec["volumes"]), 1)
        v = spec["volumes"][0]
        self.assertEqual(v["name"], "data")
        self.assertIn("emptyDir", v)


class Knative(unittest.TestCase, Common):
    def setUp(self):
        d = docs("knative", "--image", IMAGE)
        self.assertEqual(len(d), 1)
        self.svc = d[0]

    def test_service(self):
        s = self.svc
        self.assertEqual(s["apiVersion"], "serving.knative.dev/v1")
        self.assertEqual(s["kind"], "Service")
        self.assertEqual(s["metadata"]["name"], "hookd")

    def test_scale_to_zero_annotations(self):
        a = self.svc["spec"]["template"]["metadata"]["annotations"]
        # Annotation values are strings: a bare 0 would be rejected.
        self.assertEqual(a["autoscaling.knative.dev/min-scale"], "0")
        self.assertRegex(a["autoscaling.knative.dev/max-scale"], r"^[1-9]\d*$")
        self.assertRegex(a["autoscaling.knative.dev/target"], r"^[1-9]\d*$")
        self.assertEqual(a["autoscaling.knative.dev/metric"], "concurrency")

    def test_pod_spec(self):
        spec = self.svc["spec"]["template"]["spec"]
        self.assertIsInstance(spec["containerConcurrency"], int)
        self.assertGreater(spec["containerConcurrency"], 0)
        self.assertGreaterEqual(spec["containerConcurrency"],
                                int(self.svc["spec"]["template"]["metadata"]["annotations"]
                                    ["autoscaling.knative.dev/target"]))
        self.assertEqual(len(spec["containers"]), 1)
        c = spec["containers"][0]
        self.check_container(c, "http1")
        self.check_volumes(spec)
        # The drain must end before Knative's grace period (timeoutSeconds).
        drain = int(env_of(c)["HOOKD_DRAIN_TIMEOUT"]["value"][:-1])
        self.assertLess(drain, spec["timeoutSeconds"])
        # Knative owns the pod: fields it rejects must not appear.
        for k in ("securityContext", "terminationGracePeriodSeconds"):
            self.assertNotIn(k, spec)
        self.assertNotIn("lifecycle", c)
        # No periodSeconds: queue-proxy's aggressive probing at cold start.
        self.assertNotIn("periodSeconds", c["readinessProbe"])

    def test_committed_file_is_generated_output(self):
        with open(os.path.join(SRC, "deploy/knative/service.yaml")) as f:
            committed = f.read()
        self.assertEqual(committed, manifest("knative", "--image", IMAGE).stdout,
                         "deploy/knative/service.yaml is stale: run make manifests")

    def test_sink_binding_points_the_service_at_a_broker(self):
        d = docs("knative", "--image", IMAGE, "--name", "hooks", "--namespace", "web", "--sink-broker", "default")
        self.assertEqual(len(d), 2)
        self.assertEqual(d[0]["kind"], "Service")
        b = d[1]
        self.assertEqual((b["apiVersion"], b["kind"]), ("sources.knative.dev/v1", "SinkBinding"))
        self.assertEqual(b["metadata"]["namespace"], "web")
        self.assertEqual(b["spec"]["subject"], {"apiVersion": "serving.knative.dev/v1", "kind": "Service",
                                                "name": "hooks"})
        self.assertEqual(b["spec"]["sink"], {"ref": {"apiVersion": "eventing.knative.dev/v1", "kind": "Broker",
                                                     "name": "default"}})
        self.assertEqual(len(docs("knative", "--image", IMAGE)), 1, "no SinkBinding unless asked")
        with open(os.path.join(SRC, "deploy/knative/service-with-broker.yaml")) as f:
            committed = f.read()
        self.assertEqual(committed, manifest("knative", "--image", IMAGE, "--sink-broker", "default").stdout,
                         "deploy/knative/service-with-broker.yaml is stale: run make manifests")

    def test_the_broker_example_wires_hookd_to_a_trigger(self):
        with open(os.path.join(SRC, "deploy/knative/broker.yaml")) as f:
            d = [x for x in yaml.safe_load_all(f) if x]
        kinds = [(x["apiVersion"], x["kind"]) for x in d]
        self.assertIn(("eventing.knative.dev/v1", "Broker"), kinds)
        self.assertIn(("eventing.knative.dev/v1", "Trigger"), kinds)
        broker = [x for x in d if x["kind"] == "Broker"][0]["metadata"]["name"]
        for t in (x for x in d if x["kind"] == "Trigger"):
            self.assertEqual(t["spec"]["broker"], broker)
            self.assertRegex(t["spec"]["filter"]["attributes"]["type"], r"^[A-Za-z0-9._-]+$")

    def test_flags(self):
        s = docs("knative", "--image", "reg.example/x/hookd@sha256:" + "a" * 64, "--name", "hooks",
                 "--namespace", "web", "--min-scale", "1", "--max-scale", "3", "--target", "50",
                 "--container-concurrency", "80", "--secret", "pg-url", "--memory-limit", "256Mi",
                 "--no-startup-probe")[0]
        self.assertEqual(s["metadata"]["name"], "hooks")
        self.assertEqual(s["metadata"]["namespace"], "web")
        a = s["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual((a["autoscaling.knative.dev/min-scale"], a["autoscaling.knative.dev/max-scale"],
                          a["autoscaling.knative.dev/target"]), ("1", "3", "50"))
        spec = s["spec"]["template"]["spec"]
        self.assertEqual(spec["containerConcurrency"], 80)
        c = spec["containers"][0]
        self.assertEqual(c["name"], "hooks")
        self.assertEqual(c["image"], "reg.example/x/hookd@sha256:" + "a" * 64)
        self.assertEqual(env_of(c)["DATABASE_URL"]["valueFrom"]["secretKeyRef"]["name"], "pg-url")
        self.assertEqual(c["resources"]["limits"]["memory"], "256Mi")
        self.assertNotIn("startupProbe", c)

    def test_bad_flags_fail_with_one_line(self):
        for args in (["knative"], ["knative", "--image", "a b"], ["knative", "--image", "x", "--name", "Hookd"],
                     ["knative", "--image", "x", "--min-scale", "-1"], ["knative", "--image", "x", "--bogus", "1"],
                     ["knative", "--image", "x", "--memory-limit", "lots"],
                     ["knative", "--image", "x", "--min-scale", "5", "--max-scale", "2"],
                     ["knative", "--image", "x", "--drain-seconds", "60", "--timeout-seconds", "60"],
                     ["knative", "--image", "x", "--sink-broker", "Bad_Name"],
                     ["kubernetes", "--image", "x", "--sink-broker", "default"],
                     ["knative", "--image", "x", "--no-network-policy"],
                     ["knative", "--image", "x", "--ephemeral-storage-limit", "1Gi"],
                     ["kubernetes", "--image", "x", "--ephemeral-storage-request", "some"],
                     ["swarm", "--image", "x"], []):
            p = manifest(*args, rc=2)
            self.assertEqual(p.stdout, "", args)
            if args and args[0] in ("knative", "kubernetes"):
                self.assertEqual(p.stderr.count("\n"), 1, (args, p.stderr))


class Kubernetes(unittest.TestCase, Common):
    def setUp(self):
        d = docs("kubernetes", "--image", IMAGE)
        self.assertEqual([x["kind"] for x in d], ["Deployment", "Service", "NetworkPolicy"])
        self.dep, self.svc, self.netpol = d

    def test_deployment(self):
        d = self.dep
        self.assertEqual(d["apiVersion"], "apps/v1")
        sel = d["spec"]["selector"]["matchLabels"]
        self.assertEqual(d["spec"]["template"]["metadata"]["labels"], sel)
        spec = d["spec"]["template"]["spec"]
        c = spec["containers"][0]
        self.check_container(c, "http")
        self.check_volumes(spec)
        self.assertEqual(spec["securityContext"]["seccompProfile"], {"type": "RuntimeDefault"})
        # preStop sleep, then the drain: both inside the grace period.
        drain = int(env_of(c)["HOOKD_DRAIN_TIMEOUT"]["value"][:-1])
        sleep = c["lifecycle"]["preStop"]["sleep"]["seconds"]
        self.assertGreater(spec["terminationGracePeriodSeconds"], drain + sleep)

    def test_service(self):
        s = self.svc
        self.assertEqual(s["apiVersion"], "v1")
        self.assertEqual(s["spec"]["selector"], self.dep["spec"]["selector"]["matchLabels"])
        self.assertEqual(s["spec"]["ports"][0]["targetPort"], "http")

    def test_ephemeral_storage(self):
        spec = self.dep["spec"]["template"]["spec"]
        res = spec["containers"][0]["resources"]
        req, lim = res["requests"]["ephemeral-storage"], res["limits"]["ephemeral-storage"]
        self.assertLessEqual(bytes_of(req), bytes_of(lim))
        # SQLite's emptyDir counts against the limit: the limit must hold it.
        size = spec["volumes"][0]["emptyDir"]["sizeLimit"]
        self.assertGreater(bytes_of(lim), bytes_of(size))
        c = docs("kubernetes", "--image", IMAGE, "--ephemeral-storage-request", "1Gi",
                 "--ephemeral-storage-limit", "3Gi")[0]["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual((c["resources"]["requests"]["ephemeral-storage"],
                          c["resources"]["limits"]["ephemeral-storage"]), ("1Gi", "3Gi"))
        # Knative's container has none (Knative owns the pod's disk).
        k = docs("knative", "--image", IMAGE)[0]["spec"]["template"]["spec"]["containers"][0]
        self.assertNotIn("ephemeral-storage", k["resources"]["requests"])
        self.assertNotIn("ephemeral-storage", k["resources"]["limits"])

    def test_network_policy(self):
        n = self.netpol
        self.assertEqual((n["apiVersion"], n["metadata"]["name"]), ("networking.k8s.io/v1", "hookd"))
        spec = n["spec"]
        self.assertEqual(spec["podSelector"]["matchLabels"], self.dep["spec"]["selector"]["matchLabels"])
        self.assertEqual(sorted(spec["policyTypes"]), ["Egress", "Ingress"])
        # In: hookd's container port only, from anywhere (no "from").
        port_names = {p["name"] for p in self.dep["spec"]["template"]["spec"]["containers"][0]["ports"]}
        self.assertEqual(len(spec["ingress"]), 1)
        self.assertNotIn("from", spec["ingress"][0])
        self.assertEqual(spec["ingress"][0]["ports"], [{"port": "http", "protocol": "TCP"}])
        self.assertIn("http", port_names)
        # Out: DNS both ways, and the ports of PostgreSQL, Redis and a sink.
        out = {(p["port"], p["protocol"]) for rule in spec["egress"] for p in rule["ports"]}
        self.assertTrue({(53, "UDP"), (53, "TCP"), (5432, "TCP"), (6379, "TCP"), (80, "TCP"),
                         (443, "TCP"), (8080, "TCP")} <= out, out)
        self.assertFalse(any("to" in rule for rule in spec["egress"]))
        self.assertEqual([x["kind"] for x in docs("kubernetes", "--image", IMAGE, "--no-network-policy")],
                         ["Deployment", "Service"])

    def test_committed_file_is_generated_output(self):
        with open(os.path.join(SRC, "deploy/kubernetes/hookd.yaml")) as f:
            committed = f.read()
        self.assertEqual(committed, manifest("kubernetes", "--image", IMAGE).stdout,
                         "deploy/kubernetes/hookd.yaml is stale: run make manifests")


class Systemd(unittest.TestCase):
    """The unit files: the settings the socket activation relies on."""

    def units(self, name):
        keys = {}
        with open(os.path.join(SRC, "deploy/systemd", name)) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith(("#", ";", "[")):
                    k, _, v = line.partition("=")
                    keys.setdefault(k, []).append(v)
        return keys

    def test_service(self):
        k = self.units("hookd.service")
        self.assertEqual(k["Type"], ["notify"])
        self.assertEqual(k["NotifyAccess"], ["main"])
        self.assertIn("HOOKD_EXIT_IDLE_AFTER=30s", " ".join(k["Environment"]))
        for key, want in (("DynamicUser", "yes"), ("StateDirectory", "hookd"), ("ProtectSystem", "strict"),
                          ("NoNewPrivileges", "yes"), ("SystemCallFilter", "@system-service"),
                          ("SystemCallFilter", "~@privileged @resources"), ("SystemCallErrorNumber", "EPERM"),
                          ("PrivateUsers", "yes"), ("ProcSubset", "pid"), ("IPAddressDeny", "any")):
            self.assertIn(want, k.get(key, []), key)
        self.assertIn("AF_INET", k["RestrictAddressFamilies"][0])
        # hookd raises RLIMIT_NOFILE only when soft < hard, which @resources
        # (setrlimit) would refuse: LimitNOFILE=N sets both to N.
        self.assertRegex(k["LimitNOFILE"][0], r"^\d+$")

    def install_section(self, name):
        with open(os.path.join(SRC, "deploy/systemd", name)) as f:
            text = f.read()
        m = re.search(r"^\[Install\]\n((?:[^\[].*\n?)*)", text, re.M)
        self.assertTrue(m, f"{name} has no [Install] section")
        return [x.strip() for x in m.group(1).splitlines() if x.strip() and not x.startswith("#")]

    def test_service_is_socket_started(self):
        # Enabling the service enables its socket; nothing starts it at boot.
        self.assertEqual(self.install_section("hookd.service"), ["Also=hookd.socket"])
        self.assertIn("WantedBy=sockets.target", self.install_section("hookd.socket"))

    def test_security_exposure(self):
        tool = shutil.which("systemd-analyze")
        if not tool:
            self.skipTest("systemd-analyze is not installed")
        p = subprocess.run([tool, "security", "--offline=true", "--no-pager",
                            os.path.join(SRC, "deploy/systemd/hookd.service")],
                           capture_output=True, text=True, timeout=60)
        m = re.search(r"Overall exposure level for hookd\.service: (\d+\.\d+)", p.stdout + p.stderr)
        self.assertTrue(m, p.stdout + p.stderr)
        self.assertLessEqual(float(m.group(1)), 1.0, p.stdout)

    def test_systemd_analyze_verify(self):
        import shutil
        import tempfile
        tool = shutil.which("systemd-analyze")
        if not tool:
            self.skipTest("systemd-analyze is not installed")
        with tempfile.TemporaryDirectory() as d:
            for name in ("hookd.socket", "hookd.service"):
                with open(os.path.join(SRC, "deploy/systemd", name)) as f:
                    text = f.read()
                # The unit names /usr/local/bin/hookd; verify checks it exists.
                text = text.replace("ExecStart=/usr/local/bin/hookd", "ExecStart=" + os.path.abspath(BIN))
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            p = subprocess.run([tool, "verify", os.path.join(d, "hookd.socket"), os.path.join(d, "hookd.service")],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual((p.returncode, p.stdout + p.stderr), (0, ""))

    def test_socket(self):
        k = self.units("hookd.socket")
        self.assertTrue(k["ListenStream"])
        self.assertNotIn("yes", k.get("Accept", []))


class BuildContext(unittest.TestCase):
    """`docker build` reads .dockerignore, podman .containerignore: both keep
    .git/ and build directories out of the context."""

    def test_ignore_files_agree(self):
        with open(os.path.join(SRC, ".containerignore")) as f:
            podman = f.read()
        with open(os.path.join(SRC, ".dockerignore")) as f:
            docker = f.read()
        self.assertEqual(docker, podman, ".dockerignore and .containerignore differ")
        rules = {x.strip() for x in podman.splitlines() if x.strip() and not x.startswith("#")}
        self.assertTrue({".git/", "build*/"} <= rules, rules)


if __name__ == "__main__":
    unittest.main(verbosity=2)

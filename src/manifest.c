/* SPDX-License-Identifier: MIT
 * Knative Service and Kubernetes Deployment + Service for hookd, printed as
 * YAML from a handful of flags. Every value that comes from the user is
 * checked against what Kubernetes accepts (names, quantities) or quoted, so
 * the output always parses. */
#include "manifest.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "hk_build.h"

/* hookd's port inside the container; Knative passes it again as $PORT. */
#define PORT 8080
#define DATA_DIR "/data"
/* SQLite's emptyDir may take its sizeLimit (1Gi); the kubelet counts the
 * container's logs against the same limit. The root filesystem is
 * read-only, so nothing else writes. */
#define DATA_SIZE_LIMIT "1Gi"
#define DISK_REQUEST "128Mi"
#define DISK_LIMIT "1152Mi"

struct mopts {
    const char *kind;
    const char *image;
    const char *name;
    const char *ns;
    const char *secret;
    char secret_buf[80];
    long min_scale, max_scale, target, concurrency, timeout_s, replicas, drain_s;
    const char *cpu_request, *cpu_limit, *mem_request, *mem_limit;
    const char *disk_request, *disk_limit;   /* Kubernetes: ephemeral-storage */
    const char *sink_broker;   /* Knative: a SinkBinding to this Broker, or NULL */
    bool startup_probe;
    bool network_policy;       /* Kubernetes: the NetworkPolicy document */
};

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: hookd manifest knative|kubernetes --image IMAGE [flags]\n"
            "Prints a Knative Service, or a Kubernetes Deployment + Service, for hookd.\n\n"
            "  --image IMAGE               container image (required), e.g. %s:%s\n"
            "  --name NAME                 object and container name [hookd]\n"
            "  --namespace NS              metadata.namespace [none: kubectl's current]\n"
            "  --secret NAME               Secret whose DATABASE_URL key selects PostgreSQL;\n"
            "                              optional, SQLite in /data when absent [NAME-db]\n"
            "  --min-scale N               Knative: autoscaling.knative.dev/min-scale [0]\n"
            "  --max-scale N               Knative: autoscaling.knative.dev/max-scale [10]\n"
            "  --target N                  Knative: target concurrent requests per pod [100]\n"
            "  --container-concurrency N   Knative: hard limit per pod, 0 = none [200]\n"
            "  --timeout-seconds N         Knative: request timeout and grace period [60]\n"
            "  --no-startup-probe          Knative: omit the startup probe (see deploy/README.md)\n"
            "  --sink-broker NAME          Knative: also a SinkBinding that sets K_SINK to the Broker NAME,\n"
            "                              so every stored webhook goes to it as a CloudEvent\n"
            "  --replicas N                Kubernetes: Deployment replicas [1]\n"
            "  --drain-seconds N           HOOKD_DRAIN_TIMEOUT on SIGTERM [30]\n"
            "  --cpu-request Q --cpu-limit Q --memory-request Q --memory-limit Q\n"
            "                              resources [100m, 1, 32Mi, 128Mi]\n"
            "  --ephemeral-storage-request Q --ephemeral-storage-limit Q\n"
            "                              Kubernetes: local disk (SQLite's emptyDir, logs) [128Mi, 1152Mi]\n"
            "  --no-network-policy         Kubernetes: omit the NetworkPolicy\n",
            HK_DEFAULT_IMAGE_REPO, HK_VERSION);
}

/* RFC 1035 label: what Kubernetes wants for Service and container names. */
static bool dns_label(const char *s, bool first_alpha)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[n - 1] == '-')
        return false;
    if (first_alpha ? !(s[0] >= 'a' && s[0] <= 'z') : s[0] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* RFC 1123 subdomain: dot-separated labels, for Secret names. */
static bool dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253 || s[0] == '.' || s[n - 1] == '.' || strstr(s, ".."))
        return false;
    char label[254];
    memcpy(label, s, n + 1);
    for (char *save = NULL, *t = strtok_r(label, ".", &save); t; t = strtok_r(NULL, ".", &save))
        if (!dns_label(t, false))
            return false;
    return true;
}

/* A Kubernetes quantity such as 100m, 1, 0.5, 32Mi, 1Gi. */
static bool quantity(const char *s)
{
    size_t i = 0, digits = 0;
    while ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')
        digits += s[i++] != '.';
    if (!digits)
        return false;
    static const char *const suffixes[] = {"", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"};
    for (size_t k = 0; k < sizeof suffixes / sizeof suffixes[0]; k++)
        if (strcmp(s + i, suffixes[k]) == 0)
            return true;
    return false;
}

/* An image reference: printable, no spaces or quotes (quoted on output anyway). */
static bool image_ref(const char *s)
{
    if (!*s || strlen(s) > 512)
        return false;
    for (const char *p = s; *p; p++)
        if (*p <= ' ' || *p >= 127 || *p == '"' || *p == '\\' || *p == '\'')
            return false;
    return true;
}

static int bad(const char *fmt, const char *v) __attribute__((format(printf, 1, 0)));

static int bad(const char *fmt, const char *v)
{
    fprintf(stderr, "hookd manifest: ");
    fprintf(stderr, fmt, v);
    fputc('\n', stderr);
    return 2;
}

/* One flag's value into `o`. Returns 0, or 2 after a message. */
static int set_flag(struct mopts *o, const char *name, const char *v)
{
    struct {
        const char *flag;
        long *num;
        long min, max;
        const char **str;
    } tab[] = {
        {"--image", NULL, 0, 0, &o->image},
        {"--name", NULL, 0, 0, &o->name},
        {"--namespace", NULL, 0, 0, &o->ns},
        {"--secret", NULL, 0, 0, &o->secret},
        {"--cpu-request", NULL, 0, 0, &o->cpu_request},
        {"--cpu-limit", NULL, 0, 0, &o->cpu_limit},
        {"--memory-request", NULL, 0, 0, &o->mem_request},
        {"--memory-limit", NULL, 0, 0, &o->mem_limit},
        {"--ephemeral-storage-request", NULL, 0, 0, &o->disk_request},
        {"--ephemeral-storage-limit", NULL, 0, 0, &o->disk_limit},
        {"--sink-broker", NULL, 0, 0, &o->sink_broker},
        {"--min-scale", &o->min_scale, 0, 10000, NULL},
        {"--max-scale", &o->max_scale, 0, 10000, NULL},
        {"--target", &o->target, 1, 100000, NULL},
        {"--container-concurrency", &o->concurrency, 0, 1000, NULL},
        {"--timeout-seconds", &o->timeout_s, 1, 3600, NULL},
        {"--replicas", &o->replicas, 0, 10000, NULL},
        {"--drain-seconds", &o->drain_s, 0, 3600, NULL},
    };
    size_t i = 0;
    while (i < sizeof tab / sizeof tab[0] && strcmp(tab[i].flag, name) != 0)
        i++;
    if (i == sizeof tab / sizeof tab[0])
        return bad("unknown flag \"%s\" (see hookd manifest --help)", name);
    if (tab[i].str) {
        *tab[i].str = v;
        return 0;
    }
    int64_t n;
    if (hk_parse_int(v, tab[i].min, tab[i].max, &n) < 0) {
        fprintf(stderr, "hookd manifest: invalid %s \"%s\": expected an integer from %ld to %ld\n", name, v,
                tab[i].min, tab[i].max);
        return 2;
    }
    *tab[i].num = (long)n;
    return 0;
}

/* The options together: required, well-formed, consistent. */
static int check_opts(struct mopts *o)
{
    if (!o->image)
        return bad("%s", "--image is required (see hookd manifest --help)");
    if (!image_ref(o->image))
        return bad("invalid --image \"%s\": expected an image reference such as repo/name:tag", o->image);
    if (!dns_label(o->name, true))
        return bad("invalid --name \"%s\": expected a DNS label (a-z, 0-9, '-', at most 63)", o->name);
    if (o->ns && !dns_label(o->ns, false))
        return bad("invalid --namespace \"%s\": expected a DNS label", o->ns);
    if (!o->secret) {
        snprintf(o->secret_buf, sizeof o->secret_buf, "%s-db", o->name);
        o->secret = o->secret_buf;
    }
    if (!dns_subdomain(o->secret))
        return bad("invalid --secret \"%s\": expected a DNS subdomain", o->secret);
    /* Knative owns the pod's disk and networking (queue-proxy, the mesh):
     * these are the plain Deployment's. */
    if (strcmp(o->kind, "kubernetes") != 0 && (o->disk_request || o->disk_limit || !o->network_policy))
        return bad("%s", "--ephemeral-storage-request, --ephemeral-storage-limit and --no-network-policy are for "
                         "kubernetes");
    if (!o->disk_request)
        o->disk_request = DISK_REQUEST;
    if (!o->disk_limit)
        o->disk_limit = DISK_LIMIT;
    const char *q[] = {o->cpu_request, o->cpu_limit, o->mem_request, o->mem_limit, o->disk_request, o->disk_limit};
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        if (!quantity(q[i]))
            return bad("invalid resource quantity \"%s\" (such as 100m, 1, 32Mi)", q[i]);
    if (o->max_scale && o->max_scale < o->min_scale)
        return bad("%s", "--max-scale is below --min-scale");
    if (o->drain_s >= o->timeout_s && strcmp(o->kind, "knative") == 0)
        return bad("%s", "--drain-seconds must be below --timeout-seconds (Knative's grace period)");
    if (o->sink_broker && strcmp(o->kind, "knative") != 0)
        return bad("%s", "--sink-broker is for knative (a Deployment takes HOOKD_FORWARD_URL)");
    if (o->sink_broker && !dns_subdomain(o->sink_broker))
        return bad("invalid --sink-broker \"%s\": expected a DNS subdomain", o->sink_broker);
    return 0;
}

static int parse_args(struct mopts *o, int argc, char **argv)
{
    for (int a = 2; a < argc; a++) {
        const char *f = argv[a];
        if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(f, "--no-startup-probe") == 0) {
            o->startup_probe = false;
            continue;
        }
        if (strcmp(f, "--no-network-policy") == 0) {
            o->network_policy = false;
            continue;
        }
        const char *eq = strchr(f, '=');
        char name[40];
        size_t nlen = eq ? (size_t)(eq - f) : strlen(f);
        if (strncmp(f, "--", 2) != 0 || nlen >= sizeof name)
            return bad("unexpected argument \"%s\" (see hookd manifest --help)", f);
        memcpy(name, f, nlen);
        name[nlen] = 0;
        const char *v = eq ? eq + 1 : NULL;
        if (!v) {
            if (a + 1 >= argc)
                return bad("flag %s needs a value", name);
            v = argv[++a];
        }
        int rc = set_flag(o, name, v);
        if (rc)
            return rc;
    }
    return check_opts(o);
}

static void header(FILE *f, const struct mopts *o, int argc, char **argv)
{
    fprintf(f, "# Generated by hookd %s:\n#   hookd", HK_VERSION);
    for (int a = 0; a < argc; a++)
        fprintf(f, " %s", argv[a]);
    fprintf(f, "\n# Regenerate rather than edit (make manifests rewrites deploy/).\n"
               "#\n"
               "# Memory, measured on hookd 0.1.0 (release build, 2 event loops, SQLite):\n"
               "# RSS 4.3 MiB idle after start, 7.5 MiB after 15 s of POSTs at 28k/s from 64\n"
               "# connections. What grows is response buffers: about 0.4 MiB per in-flight\n"
               "# 1000-row list page (peak 30 MiB with 64 of them at once, 98 MiB with 256).\n"
               "# So: request %s, limit %s", o->mem_request, o->mem_limit);
    if (strcmp(o->kind, "knative") == 0)
        fprintf(f, ", with containerConcurrency %ld bounding how many\n"
                   "# requests (hence pages) a pod holds at once.\n", o->concurrency);
    else
        fprintf(f, ".\n");
    if (strcmp(o->kind, "kubernetes") == 0)
        fprintf(f, "#\n"
                   "# Ephemeral storage: request %s, limit %s, for SQLite's emptyDir\n"
                   "# (sizeLimit %s) and the container's logs, which the kubelet counts too.\n",
                o->disk_request, o->disk_limit, DATA_SIZE_LIMIT);
    fprintf(f, "#\n"
               "# Storage: DATABASE_URL from the Secret \"%s\" (key DATABASE_URL) selects\n"
               "# PostgreSQL. Without that Secret hookd keeps SQLite in an emptyDir at %s:\n"
               "# one database per pod, gone with the pod%s. Fine for a trial;\n"
               "# use PostgreSQL for anything else.\n",
            o->secret, DATA_DIR, strcmp(o->kind, "knative") == 0 ? " (after every scale to zero)" : "");
}

static void metadata(FILE *f, const struct mopts *o, const char *indent)
{
    fprintf(f, "%sname: %s\n", indent, o->name);
    if (o->ns)
        fprintf(f, "%snamespace: %s\n", indent, o->ns);
    fprintf(f, "%slabels:\n", indent);
    fprintf(f, "%s  app.kubernetes.io/name: %s\n", indent, o->name);
    fprintf(f, "%s  app.kubernetes.io/version: \"%s\"\n", indent, HK_VERSION);
}

static void probe(FILE *f, const char *ind, const char *kind, const char *path, int period, int failures)
{
    fprintf(f, "%s%s:\n", ind, kind);
    fprintf(f, "%s  httpGet:\n%s    path: %s\n%s    port: %d\n", ind, ind, path, ind, PORT);
    if (period)
        fprintf(f, "%s  periodSeconds: %d\n", ind, period);
    if (failures)
        fprintf(f, "%s  failureThreshold: %d\n", ind, failures);
}

/* The container, at indentation `ind` (its "- name:" line). */
static void container(FILE *f, const struct mopts *o, const char *ind, bool knative)
{
    fprintf(f, "%s- name: %s\n", ind, o->name);
    fprintf(f, "%s  image: \"%s\"\n", ind, o->image);
    fprintf(f, "%s  ports:\n", ind);
    fprintf(f, "%s    - name: %s\n", ind, knative ? "http1" : "http");
    fprintf(f, "%s      containerPort: %d\n", ind, PORT);
    if (!knative)
        fprintf(f, "%s      protocol: TCP\n", ind);
    fprintf(f, "%s  env:\n", ind);
    fprintf(f, "%s    - name: HOOKD_SQLITE_PATH\n%s      value: %s/hookd.db\n", ind, ind, DATA_DIR);
    fprintf(f, "%s    - name: HOOKD_DRAIN_TIMEOUT\n%s      value: %lds\n", ind, ind, o->drain_s);
    fprintf(f, "%s    - name: DATABASE_URL\n", ind);
    fprintf(f, "%s      valueFrom:\n%s        secretKeyRef:\n", ind, ind);
    fprintf(f, "%s          name: %s\n%s          key: DATABASE_URL\n%s          optional: true\n", ind, o->secret,
            ind, ind);
    fprintf(f, "%s  resources:\n", ind);
    fprintf(f, "%s    requests:\n%s      cpu: %s\n%s      memory: %s\n", ind, ind, o->cpu_request, ind,
            o->mem_request);
    if (!knative)
        fprintf(f, "%s      ephemeral-storage: %s\n", ind, o->disk_request);
    fprintf(f, "%s    limits:\n%s      cpu: \"%s\"\n%s      memory: %s\n", ind, ind, o->cpu_limit, ind, o->mem_limit);
    if (!knative)
        fprintf(f, "%s      ephemeral-storage: %s\n", ind, o->disk_limit);
    char pind[64];
    snprintf(pind, sizeof pind, "%s  ", ind);
    /* Knative: no periodSeconds on readiness, so queue-proxy probes
     * aggressively during a cold start (hookd is ready within milliseconds). */
    probe(f, pind, "readinessProbe", "/q/health/ready", knative ? 0 : 2, knative ? 0 : 3);
    probe(f, pind, "livenessProbe", "/q/health/live", 10, 3);
    if (!knative || o->startup_probe)
        probe(f, pind, "startupProbe", "/q/health/started", 1, 30);
    fprintf(f, "%s  securityContext:\n", ind);
    fprintf(f, "%s    runAsNonRoot: true\n%s    runAsUser: 65532\n%s    runAsGroup: 65532\n", ind, ind, ind);
    fprintf(f, "%s    readOnlyRootFilesystem: true\n%s    allowPrivilegeEscalation: false\n", ind, ind);
    fprintf(f, "%s    capabilities:\n%s      drop:\n%s        - ALL\n", ind, ind, ind);
    fprintf(f, "%s    seccompProfile:\n%s      type: RuntimeDefault\n", ind, ind);
    fprintf(f, "%s  volumeMounts:\n%s    - name: data\n%s      mountPath: %s\n", ind, ind, ind, DATA_DIR);
}

static void volumes(FILE *f, const char *ind)
{
    fprintf(f, "%svolumes:\n%s  - name: data\n%s    emptyDir:\n%s      sizeLimit: %s\n", ind, ind, ind, ind,
            DATA_SIZE_LIMIT);
}

static void knative(FILE *f, const struct mopts *o)
{
    fprintf(f, "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata:\n");
    metadata(f, o, "  ");
    fprintf(f, "spec:\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: %s\n", o->name);
    fprintf(f, "      annotations:\n");
    fprintf(f, "        autoscaling.knative.dev/min-scale: \"%ld\"\n", o->min_scale);
    fprintf(f, "        autoscaling.knative.dev/max-scale: \"%ld\"\n", o->max_scale);
    fprintf(f, "        autoscaling.knative.dev/metric: concurrency\n");
    fprintf(f, "        autoscaling.knative.dev/target: \"%ld\"\n", o->target);
    fprintf(f, "    spec:\n");
    fprintf(f, "      containerConcurrency: %ld\n", o->concurrency);
    /* Knative also makes this the pod's terminationGracePeriodSeconds, and
     * sends SIGTERM only once queue-proxy has drained: hookd then closes
     * idle keep-alive connections, finishes what is in flight within
     * HOOKD_DRAIN_TIMEOUT, closes the store and exits 0. */
    fprintf(f, "      timeoutSeconds: %ld\n", o->timeout_s);
    fprintf(f, "      containers:\n");
    container(f, o, "        ", true);
    volumes(f, "      ");
    if (!o->sink_broker)
        return;
    /* Knative Eventing injects K_SINK (the Broker's address) into the
     * Service's pods: hookd forwards every stored webhook there as a
     * CloudEvent, through its outbox (docs/forwarding.md). */
    fprintf(f, "---\napiVersion: sources.knative.dev/v1\nkind: SinkBinding\nmetadata:\n");
    fprintf(f, "  name: %s-sink\n", o->name);
    if (o->ns)
        fprintf(f, "  namespace: %s\n", o->ns);
    fprintf(f, "  labels:\n    app.kubernetes.io/name: %s\n", o->name);
    fprintf(f, "spec:\n  subject:\n    apiVersion: serving.knative.dev/v1\n    kind: Service\n    name: %s\n",
            o->name);
    fprintf(f, "  sink:\n    ref:\n      apiVersion: eventing.knative.dev/v1\n      kind: Broker\n      name: %s\n",
            o->sink_broker);
}

/* In: hookd's one port (webhooks, the API, probes, scrapes). Out: DNS,
 * and the ports of what hookd talks to by default. An egress port is the
 * destination pod's (after the Service's translation), hence 8080 beside
 * 80 and 443 for an in-cluster sink. */
static void network_policy(FILE *f, const struct mopts *o)
{
    fprintf(f, "---\n"
               "# Traffic in: only to hookd's port. Traffic out: DNS, PostgreSQL (5432), Redis\n"
               "# (6379) and a forwarding sink on 80, 443 or 8080 (the port of the pod behind a\n"
               "# Service). A database or sink on another port needs it added here; enforced\n"
               "# only where the cluster's network plugin implements NetworkPolicy\n"
               "# (--no-network-policy leaves this out).\n"
               "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n");
    metadata(f, o, "  ");
    fprintf(f, "spec:\n  podSelector:\n    matchLabels:\n      app.kubernetes.io/name: %s\n", o->name);
    fprintf(f, "  policyTypes:\n    - Ingress\n    - Egress\n");
    fprintf(f, "  ingress:\n    - ports:\n        - port: http\n          protocol: TCP\n");
    fprintf(f, "  egress:\n    - ports:\n        - port: 53\n          protocol: UDP\n"
               "        - port: 53\n          protocol: TCP\n");
    static const int out_ports[] = {5432, 6379, 80, 443, 8080};
    fprintf(f, "    - ports:\n");
    for (size_t i = 0; i < sizeof out_ports / sizeof out_ports[0]; i++)
        fprintf(f, "        - port: %d\n          protocol: TCP\n", out_ports[i]);
}

static void kubernetes(FILE *f, const struct mopts *o)
{
    fprintf(f, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n");
    metadata(f, o, "  ");
    fprintf(f, "spec:\n  replicas: %ld\n", o->replicas);
    fprintf(f, "  selector:\n    matchLabels:\n      app.kubernetes.io/name: %s\n", o->name);
    fprintf(f, "  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: %s\n", o->name);
    fprintf(f, "    spec:\n");
    fprintf(f, "      automountServiceAccountToken: false\n");
    fprintf(f, "      enableServiceLinks: false\n");
    /* The preStop sleep covers the seconds the endpoint removal takes to
     * reach every node, so no new connection meets a closed socket; then
     * SIGTERM and the drain. The image has no shell: this is the kubelet's
     * own sleep action (Kubernetes 1.30 and later). */
    fprintf(f, "      terminationGracePeriodSeconds: %ld\n", o->drain_s + 15);
    fprintf(f, "      securityContext:\n        runAsNonRoot: true\n        fsGroup: 65532\n");
    fprintf(f, "        seccompProfile:\n          type: RuntimeDefault\n");
    fprintf(f, "      containers:\n");
    container(f, o, "        ", false);
    fprintf(f, "          lifecycle:\n            preStop:\n              sleep:\n                seconds: 5\n");
    volumes(f, "      ");
    fprintf(f, "---\napiVersion: v1\nkind: Service\nmetadata:\n");
    metadata(f, o, "  ");
    fprintf(f, "spec:\n  selector:\n    app.kubernetes.io/name: %s\n", o->name);
    fprintf(f, "  ports:\n    - name: http\n      port: 80\n      targetPort: http\n      protocol: TCP\n");
    if (o->network_policy)
        network_policy(f, o);
}

int hk_manifest_main(int argc, char **argv, FILE *out)
{
    struct mopts o = {
        .name = "hookd",
        .min_scale = 0,
        .max_scale = 10,
        .target = 100,
        .concurrency = 200,
        .timeout_s = 60,
        .replicas = 1,
        .drain_s = 30,
        .cpu_request = "100m",
        .cpu_limit = "1",
        .mem_request = "32Mi",
        .mem_limit = "128Mi",
        .startup_probe = true,
        .network_policy = true,
    };
    if (argc < 2 || (strcmp(argv[1], "knative") != 0 && strcmp(argv[1], "kubernetes") != 0)) {
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            usage(stdout);
            return 0;
        }
        usage(stderr);
        return 2;
    }
    o.kind = argv[1];
    int rc = parse_args(&o, argc, argv);
    if (rc)
        return rc == 1 ? 0 : rc;
    header(out, &o, argc, argv);
    if (strcmp(o.kind, "knative") == 0)
        knative(out, &o);
    else
        kubernetes(out, &o);
    return fflush(out) == 0 ? 0 : 1;
}

#!/usr/bin/python3
"""Renders the Kubernetes overlays offline and checks them against the server's own flags.

For each overlay in deploy/k8s/overlays, `kubectl kustomize` (no cluster involved) renders the
manifests; the server container's flags are its args with every --flagfile expanded from the
rendered ConfigMap it names (absl semantics: in order, the last value of a flag wins). Checks:

  - every --flag is one `skinning-server --helpfull` lists, or is in PLANNED_FLAGS below;
  - the container port named grpc is the --address port; readiness, liveness (and startup)
    probes are native gRPC probes on the plaintext --health_address port (container port
    health), and never on a port that serves TLS; the ClusterIP and headless Services select the
    pods and target the grpc port; TLS and token files named by flags are in mounted Secrets
    (the token file's without subPath, so that updates reach it);
  - terminationGracePeriodSeconds >= preStop sleep + --drain_seconds, and liveness cannot
    restart a pod while it drains;
  - --store_dir is on a writable volume; the three caches (--cache_mb, --bake_cache_mb,
    --psd_cache_mb) take at most half the memory limit; no `replicas` where an autoscaler owns
    the count;
  - the HPA scales this Deployment, the PDB selects its pods;
  - dev: one replica, no --redis, no Redis objects; prod: >= 3 replicas, --redis naming the
    rendered Redis Service, an HPA with minReplicas >= 3, a PDB, the TLS Secret mounted, bearer
    tokens required;
  - the HTTP front door: --http_address's port is container port http and a ClusterIP Service
    port; in prod an Ingress with TLS routes to it and lets --max_message_mb through;
  - NetworkPolicies: the server and worker pods admit every port they declare from anywhere; in
    prod the in-cluster Redis admits only those pods and KEDA's namespace;
  - kustomization.yaml files use only fields the kustomize in Debian 12's kubectl 1.20 knows;
  - the Envoy ring-hash example routes by x-rig-id to the prod headless Service's port, over TLS
    when the prod replicas serve it;
  - the bake workers: a Deployment with --role=worker that no Service selects (none in dev);
    in prod the API runs --role=api with the same --redis, the HPA scales the API, and a KEDA
    ScaledObject scales the workers on the length of the server's stream
    (<--redis_prefix>bakequeue:stream, no consumerGroup) at the --redis address.

Prints one line per check; exits 1 if any fails. Without kubectl (or PyYAML) it skips
(exit 77), except in CI (CI=true), where that is a failure.

Usage: check_manifests.py --repo REPO_ROOT --server path/to/skinning-server [--kubectl K]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

# Flags the manifests may use before the server binary knows them. Keep this list short and
# say where each comes from: anything else unknown to the binary (a typo) fails the test.
PLANNED_FLAGS = {
    # Empty: every flag the manifests use is a flag of the server binary today.
}

# Fields of kustomization.yaml that the kustomize embedded in kubectl 1.20 (v2.0.3, Debian
# 12's kubernetes-client) supports. Newer ones (patches, labels, replicas, components, ...)
# would render with a newer kubectl but fail on Debian's.
KUSTOMIZE_V2_FIELDS = {
    "apiVersion", "kind", "resources", "bases", "namespace", "namePrefix", "nameSuffix",
    "commonLabels", "commonAnnotations", "configMapGenerator", "secretGenerator",
    "generatorOptions", "patchesStrategicMerge", "patchesJson6902", "images", "vars", "crds",
}

SKIP = 77
OVERLAYS = ("dev", "prod")
SERVER_CONTAINER = "server"
PLANNED_FLAGS_SEEN = set()


class Checker:
    def __init__(self):
        self.failures = 0

    def check(self, ok, what, detail=""):
        print(("PASS " if ok else "FAIL ") + what + (f" ({detail})" if detail else ""))
        if not ok:
            self.failures += 1
        return ok


def unavailable(what):
    """kubectl or PyYAML missing: skip, except in CI."""
    if os.environ.get("CI", "").lower() == "true":
        print(f"FAIL {what} (CI=true: required; scripts/install-deps.sh installs it)")
        sys.exit(1)
    print(f"SKIP {what} (install it with scripts/install-deps.sh)")
    sys.exit(SKIP)


def known_server_flags(server):
    """Flag names and defaults from `skinning-server --helpfull` (absl exits 1 after help)."""
    out = subprocess.run([server, "--helpfull"], capture_output=True, text=True, timeout=60)
    text = out.stdout + out.stderr
    names = re.findall(r"^\s+--([A-Za-z0-9_]+) \(", text, re.M)
    defaults = {}
    for m in re.finditer(r"^\s+--([A-Za-z0-9_]+) \((.*?)\);\s+default: (.*?);", text, re.M | re.S):
        defaults[m.group(1)] = m.group(3).strip().strip('"')
    return set(names), defaults


def parse_flag(arg):
    """'--name=value' -> (name, value); '--name' -> (name, None); otherwise None."""
    m = re.fullmatch(r"--?([A-Za-z0-9_]+)(?:=(.*))?", arg, re.S)
    return (m.group(1), m.group(2)) if m else None


def memory_bytes(q):
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "K": 10**3, "M": 10**6, "G": 10**9}
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([A-Za-z]*)", str(q))
    if not m or (m.group(2) and m.group(2) not in units):
        return None
    return float(m.group(1)) * units.get(m.group(2), 1)


def labels_match(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def selector_matches(selector, labels):
    """Kubernetes label-selector semantics (matchLabels and matchExpressions, ANDed; {} matches
    everything)."""
    if selector is None:
        return False
    if not all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for e in selector.get("matchExpressions", []):
        key, op, values = e["key"], e["operator"], e.get("values", [])
        ok = {"In": key in labels and labels[key] in values,
              "NotIn": key not in labels or labels[key] not in values,
              "Exists": key in labels,
              "DoesNotExist": key not in labels}[op]
        if not ok:
            return False
    return True


def port_allowed(rule, port):
    """Whether an ingress rule's ports list admits a container port {name, containerPort}."""
    ports = rule.get("ports")
    if not ports:
        return True
    return any(p.get("protocol", "TCP") == port.get("protocol", "TCP")
               and p.get("port") in (None, port.get("name"), port["containerPort"]) for p in ports)


def peer_admits(peer, pod_labels, pod_namespace_labels, same_namespace):
    """Whether one `from` peer admits a pod: a podSelector alone means this namespace."""
    if "ipBlock" in peer:
        return False
    if "namespaceSelector" in peer:
        if not selector_matches(peer["namespaceSelector"], pod_namespace_labels):
            return False
    elif not same_namespace:
        return False
    return "podSelector" not in peer or selector_matches(peer["podSelector"], pod_labels)


def admitted(policies, port, pod_labels, namespace_labels, same_namespace):
    """Whether some ingress rule of the policies admits this source pod to `port`."""
    return any(port_allowed(rule, port)
               and (not rule.get("from") or any(peer_admits(peer, pod_labels, namespace_labels, same_namespace)
                                                 for peer in rule["from"]))
               for pol in policies for rule in pol["spec"].get("ingress", []))


def check_network_policies(c, name, objects):
    """The server pods (API and workers) admit every port their containers declare, from
    anywhere (clients come through load balancers); in prod the password-less in-cluster Redis
    admits only the server pods of its namespace and KEDA's operator (namespace keda), and no
    other pod."""
    policies = [o for o in objects if o["kind"] == "NetworkPolicy" and "Ingress" in o["spec"].get("policyTypes", ["Ingress"])]
    deployments = [d for d in objects if d["kind"] == "Deployment"]
    stranger = {"app.kubernetes.io/name": "some-other-app"}
    for dep in deployments:
        labels = dep["spec"]["template"]["metadata"].get("labels", {})
        namespace = dep["metadata"].get("namespace", "default")
        mine = [p for p in policies if p["metadata"].get("namespace", "default") == namespace
                and selector_matches(p["spec"]["podSelector"], labels)]
        what = f"{name}: Deployment {dep['metadata']['name']}"
        if not c.check(bool(mine), f"{what}: a NetworkPolicy selects its pods", ", ".join(p["metadata"]["name"] for p in mine)):
            continue
        containers = dep["spec"]["template"]["spec"]["containers"]
        for port in [p for x in containers for p in x.get("ports", [])]:
            label = f"{port.get('name', '')} {port['containerPort']}".strip()
            if "redis" in dep["metadata"]["name"]:
                ok = (all(admitted(mine, port, d["spec"]["template"]["metadata"].get("labels", {}), {}, True)
                          for d in deployments if "redis" not in d["metadata"]["name"])
                      and admitted(mine, port, {}, {"kubernetes.io/metadata.name": "keda"}, False)
                      and not admitted(mine, port, stranger, {}, True)
                      and not admitted(mine, port, {}, {"kubernetes.io/metadata.name": "other"}, False))
                c.check(ok, f"{what}: port {label} admits the server and worker pods and KEDA's namespace, and no other pod")
            else:
                c.check(admitted(mine, port, stranger, {"kubernetes.io/metadata.name": "clients"}, False),
                        f"{what}: port {label} admits clients from anywhere")


def check_kustomizations(c, repo):
    import yaml
    root = os.path.join(repo, "deploy", "k8s")
    for dirpath, _, files in sorted(os.walk(root)):
        if "kustomization.yaml" not in files:
            continue
        rel = os.path.relpath(dirpath, repo)
        with open(os.path.join(dirpath, "kustomization.yaml")) as f:
            k = yaml.safe_load(f) or {}
        extra = sorted(set(k) - KUSTOMIZE_V2_FIELDS)
        c.check(not extra, f"{rel}: kustomization fields work with kubectl 1.20's kustomize",
                f"unsupported: {', '.join(extra)}" if extra else ", ".join(sorted(k)))
        dirs = [r for r in k.get("resources", []) if os.path.isdir(os.path.join(dirpath, r))]
        c.check(not dirs, f"{rel}: resources are files (directories go in bases for kustomize v2)",
                ", ".join(dirs))


def render(kubectl, repo, overlay):
    env = dict(os.environ, KUBECONFIG=os.devnull)  # offline: never look for a cluster
    out = subprocess.run([kubectl, "kustomize", os.path.join(repo, "deploy", "k8s", "overlays", overlay)],
                         capture_output=True, text=True, env=env, timeout=120)
    return out.returncode, out.stdout, out.stderr


def server_flags(c, name, deployment, container, objects):
    """The container's flags in order, --flagfile expanded from the mounted ConfigMaps."""
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"].get("volumes", [])}
    mounts = container.get("volumeMounts", [])
    configmaps = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ConfigMap"}

    def read_flagfile(path):
        for m in mounts:
            prefix = m["mountPath"].rstrip("/") + "/"
            if path.startswith(prefix):
                vol = volumes.get(m["name"], {})
                cm = configmaps.get(vol.get("configMap", {}).get("name"))
                key = path[len(prefix):]
                if cm is not None and key in cm.get("data", {}):
                    return cm["data"][key]
        return None

    flags = []  # (name, value, origin)
    for arg in container.get("command", [])[1:] + container.get("args", []):
        parsed = parse_flag(arg)
        if not parsed:
            c.check(False, f"{name}: container argument is a --flag", repr(arg))
            continue
        if parsed[0] != "flagfile":
            flags.append((parsed[0], parsed[1], "args"))
            continue
        for path in (parsed[1] or "").split(","):
            text = read_flagfile(path)
            if not c.check(text is not None, f"{name}: --flagfile={path} is a key of a mounted, rendered ConfigMap"):
                continue
            for line in text.splitlines():
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                parsed_line = parse_flag(line)
                if parsed_line is None:
                    c.check(False, f"{name}: {path}: line is a --flag", repr(line))
                else:
                    flags.append((parsed_line[0], parsed_line[1], path))
    return flags


CACHE_FLAGS = ("cache_mb", "bake_cache_mb", "psd_cache_mb")


def check_caches(c, name, container, values, defaults):
    """The server's three caches (each falling back to its --helpfull default when unset) take
    at most half the container's memory limit: the rest is for requests, uploads and bakes."""
    limit = memory_bytes(container.get("resources", {}).get("limits", {}).get("memory"))
    sizes = {f: int(values.get(f) or defaults.get(f, 0)) for f in CACHE_FLAGS}
    total = sum(sizes.values())
    c.check(limit is not None and total * 2**20 <= limit / 2,
            f"{name}: {container['name']}'s caches ({' + '.join(CACHE_FLAGS)}) take at most half the memory limit",
            f"{' + '.join(str(v) for v in sizes.values())} = {total} MiB vs limit "
            f"{container.get('resources', {}).get('limits', {}).get('memory')}")


def scaled_count(c, name, dep, objects):
    """A Deployment that an HPA or a KEDA ScaledObject scales must leave out spec.replicas: every
    `kubectl apply` would set the count back to it (Kubernetes, "Migrating Deployments and
    StatefulSets to horizontal autoscaling"). Returns the autoscaler's minimum, or the
    Deployment's replicas when nothing scales it."""
    target = dep["metadata"]["name"]
    hpas = [h for h in objects if h["kind"] == "HorizontalPodAutoscaler"
            and h["spec"]["scaleTargetRef"].get("kind", "Deployment") == "Deployment"
            and h["spec"]["scaleTargetRef"]["name"] == target]
    kedas = [o for o in objects if o["kind"] == "ScaledObject" and o["spec"]["scaleTargetRef"]["name"] == target]
    if hpas or kedas:
        c.check("replicas" not in dep["spec"], f"{name}: {target} leaves its replica count to its autoscaler",
                f"replicas {dep['spec'].get('replicas')}")
        if hpas:
            return hpas[0]["spec"].get("minReplicas", 1)
        return kedas[0]["spec"].get("minReplicaCount", 0)
    return dep["spec"].get("replicas", 1)


def flag_port(values, defaults, flag):
    """The port of a host:port flag (its value, else its --helpfull default), or None."""
    m = re.fullmatch(r".*:(\d+)", values.get(flag, defaults.get(flag, "")) or "")
    return int(m.group(1)) if m else None


def check_named_port(c, name, container, port_name, port, flag):
    """The container declares exactly one port named `port_name`, and it is the flag's port."""
    named = [p for p in container.get("ports", []) if p.get("name") == port_name]
    c.check(len(named) == 1 and named[0]["containerPort"] == port,
            f"{name}: {container['name']}'s container port '{port_name}' equals the --{flag} port {port}",
            f"containerPort {[p['containerPort'] for p in named]}")


def check_probes(c, name, container, values, defaults, port):
    """Readiness, liveness (and startup) are native gRPC probes on the plaintext health port
    (--health_address, its container port named health) when there is one, else on the --address
    port; the kubelet's gRPC probe speaks plaintext only, so with --tls_cert they must not use
    the --address port."""
    health = flag_port(values, defaults, "health_address")
    probe_port = health if health is not None else port
    if health is not None:
        check_named_port(c, name, container, "health", health, "health_address")
    if values.get("tls_cert"):
        c.check(probe_port != port, f"{name}: {container['name']} serves TLS, so its probes use a plaintext health port",
                f"port {probe_port}")
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        spec = container.get(probe)
        if spec is None and probe == "startupProbe":
            continue
        grpc_port = (spec or {}).get("grpc", {}).get("port")
        c.check(grpc_port == probe_port, f"{name}: {container['name']}'s {probe} is a gRPC probe on port {probe_port}",
                f"got {spec and {k: v for k, v in spec.items() if k in ('grpc', 'httpGet', 'tcpSocket', 'exec')}}")


def check_secret_files(c, name, pod, container, values):
    """Every secret file a container's flags name (TLS keys and certificates, the Redis password,
    the tokens) lies in a read-only mount of a Secret volume. The token file is read again while
    the server runs, so its mount must not use subPath (the kubelet does not update subPath
    mounts)."""
    secrets = {v["name"] for v in pod.get("volumes", []) if "secret" in v}
    for flag in ("tls_cert", "tls_key", "tls_client_ca", "redis_tls_ca_file", "redis_tls_cert_file", "redis_tls_key_file",
                 "redis_password_file", "auth_tokens"):
        path = values.get(flag)
        if not path:
            continue
        mounts = [mt for mt in container.get("volumeMounts", []) if mt["name"] in secrets and mt.get("readOnly")
                  and (path.startswith(mt["mountPath"].rstrip("/") + "/") or path == mt["mountPath"])]
        c.check(bool(mounts), f"{name}: {container['name']}'s --{flag}={path} is in a mounted Secret",
                ", ".join(mt["mountPath"] for mt in mounts))
        if flag == "auth_tokens":
            c.check(all("subPath" not in mt for mt in mounts),
                    f"{name}: {container['name']}'s --auth_tokens mount has no subPath (updates of the Secret reach it)")


def check_front_door(c, name, container, values, defaults, cluster_ip, by_kind):
    """The HTTP front door (--http_address): its container port named http, a port of the ClusterIP
    Service targeting it, and in prod an Ingress with TLS routing to that Service port that lets
    requests of up to --max_message_mb through."""
    port = flag_port(values, defaults, "http_address")
    if not c.check(port is not None, f"{name}: the HTTP front door is on (--http_address has a port)",
                   values.get("http_address") or "(unset)"):
        return
    check_named_port(c, name, container, "http", port, "http_address")
    service_ports = [p for s in cluster_ip for p in s["spec"]["ports"] if p.get("targetPort") in ("http", port)]
    if not c.check(len(service_ports) == 1, f"{name}: the ClusterIP Service has a port for the front door",
                   str(service_ports)):
        return
    if name != "prod":
        return
    service = cluster_ip[0]["metadata"]["name"]
    ingresses = [i for i in by_kind.get("Ingress", [])
                 if any(p["backend"]["service"]["name"] == service
                        and p["backend"]["service"]["port"].get("name", p["backend"]["service"]["port"].get("number"))
                        in (service_ports[0].get("name"), service_ports[0]["port"])
                        for r in i["spec"].get("rules", []) for p in r.get("http", {}).get("paths", []))]
    if not c.check(len(ingresses) == 1, f"prod: an Ingress routes to Service {service}'s front door port",
                   ", ".join(i["metadata"]["name"] for i in ingresses)):
        return
    ing = ingresses[0]
    hosts = {r.get("host") for r in ing["spec"].get("rules", [])}
    tls_hosts = {h for t in ing["spec"].get("tls", []) for h in t.get("hosts", []) if t.get("secretName")}
    c.check(bool(hosts) and hosts <= tls_hosts, f"prod: Ingress {ing['metadata']['name']} serves every host over TLS",
            f"hosts {sorted(h for h in hosts if h)} vs TLS {sorted(tls_hosts)}")
    body = ing["metadata"].get("annotations", {}).get("nginx.ingress.kubernetes.io/proxy-body-size", "1m")
    size = memory_bytes(body.upper().replace("M", "Mi").replace("G", "Gi").replace("K", "Ki")) if body != "0" else float("inf")
    limit = int(values.get("max_message_mb") or defaults.get("max_message_mb", 64)) * 2**20
    c.check(size is not None and size >= limit, f"prod: Ingress {ing['metadata']['name']} lets requests of --max_message_mb through",
            f"proxy-body-size {body} vs {limit // 2**20} MiB")
    timeout = int(ing["metadata"].get("annotations", {}).get("nginx.ingress.kubernetes.io/proxy-read-timeout", "60"))
    c.check(timeout >= 600, f"prod: Ingress {ing['metadata']['name']} keeps quiet WebSocket sessions open (read timeout >= 600 s)",
            f"{timeout} s")


def check_start_and_stop(c, name, pod, container, values, defaults):
    """Start-up: with --redis the server waits up to --store_wait_seconds for Redis before it
    listens, so the probes that run meanwhile (startupProbe, else liveness) must outlast the wait or
    the kubelet restarts the pod in a loop whenever Redis is late. Shutdown: the grace period covers
    preStop + --drain_seconds + a 5 s margin (the server's exit), and liveness cannot restart a
    draining pod."""
    if values.get("redis"):
        wait = float(values.get("store_wait_seconds") or defaults.get("store_wait_seconds", 0))
        probe = container.get("startupProbe") or container.get("livenessProbe", {})
        kind = "startupProbe" if container.get("startupProbe") else "livenessProbe"
        tolerated = probe.get("initialDelaySeconds", 0) + probe.get("periodSeconds", 10) * probe.get("failureThreshold", 3)
        c.check(tolerated > wait, f"{name}: {kind} outlasts the wait for Redis at start (--store_wait_seconds)",
                f"{tolerated} > {wait:g}")
    drain = float(values.get("drain_seconds") or defaults.get("drain_seconds", 10))
    pre_stop = 0.0
    cmd = container.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    if len(cmd) == 2 and cmd[0] == "sleep":
        pre_stop = float(cmd[1])
    grace = pod.get("terminationGracePeriodSeconds", 30)
    c.check(grace >= pre_stop + drain + 5, f"{name}: terminationGracePeriodSeconds >= preStop + --drain_seconds + 5",
            f"{grace} >= {pre_stop:g} + {drain:g} + 5")
    live = container.get("livenessProbe", {})
    tolerated = live.get("periodSeconds", 10) * live.get("failureThreshold", 3)
    c.check(tolerated > pre_stop + drain, f"{name}: liveness tolerates a whole drain (period x failureThreshold > preStop + drain)",
            f"{tolerated} > {pre_stop + drain:g}")


def check_overlay(c, name, objects, known, defaults):
    by_kind = {}
    for o in objects:
        by_kind.setdefault(o["kind"], []).append(o)
    deployments = [d for d in by_kind.get("Deployment", [])
                   if any(x["name"] == SERVER_CONTAINER for x in d["spec"]["template"]["spec"]["containers"])]
    if not c.check(len(deployments) == 1, f"{name}: one Deployment runs the server container",
                   ", ".join(d["metadata"]["name"] for d in deployments)):
        return
    dep = deployments[0]
    pod = dep["spec"]["template"]["spec"]
    pod_labels = dep["spec"]["template"]["metadata"].get("labels", {})
    container = next(x for x in pod["containers"] if x["name"] == SERVER_CONTAINER)

    flags = server_flags(c, name, dep, container, objects)
    values = {}
    for flag, value, origin in flags:
        values[flag] = value
        if flag in known:
            c.check(True, f"{name}: --{flag} is a server flag", origin)
        elif flag in PLANNED_FLAGS:
            PLANNED_FLAGS_SEEN.add(flag)
            c.check(True, f"{name}: --{flag} is a planned flag (allowlist: {PLANNED_FLAGS[flag]})", origin)
        else:
            c.check(False, f"{name}: --{flag} is a server flag", f"{origin}; not in --helpfull nor PLANNED_FLAGS")

    # Port: --address, the container port, the probes, the Services.
    port = flag_port(values, defaults, "address")
    if not c.check(bool(port), f"{name}: --address has a fixed port", values.get("address", defaults.get("address", ""))):
        return
    check_named_port(c, name, container, "grpc", port, "address")
    check_probes(c, name, container, values, defaults, port)
    check_secret_files(c, name, pod, container, values)

    named = {p["name"]: p["containerPort"] for p in container.get("ports", []) if "name" in p}
    services = [s for s in by_kind.get("Service", []) if labels_match(s["spec"].get("selector"), pod_labels)]
    headless = [s for s in services if s["spec"].get("clusterIP") == "None"]
    cluster_ip = [s for s in services if s["spec"].get("clusterIP") != "None" and s["spec"].get("type", "ClusterIP") == "ClusterIP"]
    c.check(len(cluster_ip) == 1, f"{name}: a ClusterIP Service selects the server pods", ", ".join(s["metadata"]["name"] for s in cluster_ip))
    c.check(len(headless) == 1, f"{name}: a headless Service selects the server pods", ", ".join(s["metadata"]["name"] for s in headless))
    for s in services:
        targets = [named.get(p.get("targetPort"), p.get("targetPort", p.get("port"))) for p in s["spec"]["ports"]]
        c.check(port in targets, f"{name}: Service {s['metadata']['name']} targets port {port}", f"targets {targets}")

    check_start_and_stop(c, name, pod, container, values, defaults)
    check_front_door(c, name, container, values, defaults, cluster_ip, by_kind)

    # Store directory and memory.
    store_dir = values.get("store_dir", defaults.get("store_dir", ""))
    writable = [mt for mt in container.get("volumeMounts", [])
                if not mt.get("readOnly") and (store_dir + "/").startswith(mt["mountPath"].rstrip("/") + "/")]
    c.check(bool(writable), f"{name}: --store_dir={store_dir} is on a writable volume",
            ", ".join(mt["mountPath"] for mt in writable))
    requests = container.get("resources", {}).get("requests", {})
    c.check("cpu" in requests and "memory" in requests, f"{name}: CPU and memory requests are set", str(requests))
    check_caches(c, name, container, values, defaults)

    # HPA and PDB; `replicas` is the fewest the pods can be (the HPA's minimum).
    replicas = scaled_count(c, name, dep, objects)
    hpas = [h for h in by_kind.get("HorizontalPodAutoscaler", [])
            if h["spec"]["scaleTargetRef"].get("kind") == "Deployment" and h["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"]]
    for h in hpas:
        c.check(h["apiVersion"] == "autoscaling/v2", f"{name}: HPA {h['metadata']['name']} is autoscaling/v2")
        lo, hi = h["spec"].get("minReplicas", 1), h["spec"]["maxReplicas"]
        c.check(hi >= lo >= 1, f"{name}: HPA {h['metadata']['name']} has 1 <= minReplicas <= maxReplicas", f"{lo}..{hi}")
    pdbs = [p for p in by_kind.get("PodDisruptionBudget", []) if labels_match(p["spec"]["selector"].get("matchLabels"), pod_labels)]
    for p in pdbs:
        c.check(p["apiVersion"] == "policy/v1", f"{name}: PDB {p['metadata']['name']} is policy/v1 and selects the server pods")
        c.check("minAvailable" not in p["spec"] or replicas > int(p["spec"]["minAvailable"]),
                f"{name}: PDB allows an eviction", str(p["spec"]))

    redis_objects = [f"{o['kind']}/{o['metadata']['name']}" for o in objects if "redis" in o["metadata"]["name"]]
    if name == "dev":
        c.check(replicas == 1, f"dev: one replica", f"replicas {replicas}")
        c.check(all(h["spec"]["maxReplicas"] == 1 for h in hpas), "dev: the HPA (if any) keeps one replica")
        c.check(not values.get("redis"), "dev: no --redis (filesystem store)", str(values.get("redis")))
        c.check(not redis_objects, "dev: no Redis objects", ", ".join(redis_objects))
    if name == "prod":
        c.check(replicas >= 3, "prod: at least 3 replicas", f"replicas {replicas}")
        c.check(len(hpas) == 1 and hpas[0]["spec"].get("minReplicas", 1) >= 3 and hpas[0]["spec"]["maxReplicas"] > hpas[0]["spec"]["minReplicas"],
                "prod: an HPA with minReplicas >= 3 and room to grow",
                ", ".join(f"{h['spec'].get('minReplicas')}..{h['spec']['maxReplicas']}" for h in hpas))
        c.check(len(pdbs) == 1, "prod: a PodDisruptionBudget")
        redis = values.get("redis") or ""
        c.check(bool(redis), "prod: --redis is set", redis)
        host, _, rport = redis.rpartition(":")
        if redis and "." not in host:
            svc = [s for s in by_kind.get("Service", []) if s["metadata"]["name"] == host]
            c.check(len(svc) == 1 and any(str(p["port"]) == rport for p in svc[0]["spec"]["ports"]),
                    f"prod: --redis={redis} is a rendered Service and port")
            if svc:
                c.check(any(labels_match(svc[0]["spec"]["selector"], d["spec"]["template"]["metadata"].get("labels", {}))
                            for d in by_kind.get("Deployment", [])), f"prod: Service {host} selects a Redis Deployment")
        tls = [v for v in pod.get("volumes", []) if v.get("secret", {}).get("secretName") == "skinning-server-tls"]
        c.check(len(tls) == 1 and any(mt["name"] == tls[0]["name"] for mt in container.get("volumeMounts", [])),
                "prod: the TLS Secret skinning-server-tls is mounted in the server container")
        c.check(bool(values.get("auth_tokens")), "prod: the server requires bearer tokens (--auth_tokens)")
    return {"port": port, "headless": [s["metadata"]["name"] for s in headless],
            "namespace": dep["metadata"].get("namespace", "default"), "tls": bool(values.get("tls_cert")),
            "client_ca": bool(values.get("tls_client_ca"))}


WORKER_CONTAINER = "worker"
# The server's names in Redis (server/bake/redis_bake_queue.h).
QUEUE_STREAM_SUFFIX = "bakequeue:stream"


def check_workers(c, name, objects, known, defaults):
    """The bake workers: a Deployment running --role=worker beside the API one; in prod the API
    replicas run --role=api, and a KEDA ScaledObject scales the workers on the server's Redis
    stream and consumer group at the --redis address; in dev (no Redis) there are none."""
    deployments = [d for d in objects if d["kind"] == "Deployment"
                   and any(x["name"] == WORKER_CONTAINER for x in d["spec"]["template"]["spec"]["containers"])]
    if not c.check(len(deployments) == 1, f"{name}: one Deployment runs the bake workers",
                   ", ".join(d["metadata"]["name"] for d in deployments)):
        return
    dep = deployments[0]
    container = next(x for x in dep["spec"]["template"]["spec"]["containers"] if x["name"] == WORKER_CONTAINER)
    values = {}
    for flag, value, origin in server_flags(c, name, dep, container, objects):
        values[flag] = value
        c.check(flag in known, f"{name}: worker --{flag} is a server flag", origin)
    c.check(values.get("role") == "worker", f"{name}: the workers run --role=worker", str(values.get("role")))
    check_caches(c, name, container, values, defaults)
    check_start_and_stop(c, f"{name} workers", dep["spec"]["template"]["spec"], container, values, defaults)
    worker_port = flag_port(values, defaults, "address")
    if worker_port:
        check_probes(c, f"{name} workers", container, values, defaults, worker_port)
    check_secret_files(c, f"{name} workers", dep["spec"]["template"]["spec"], container, values)
    api = next(d for d in objects if d["kind"] == "Deployment"
               and any(x["name"] == SERVER_CONTAINER for x in d["spec"]["template"]["spec"]["containers"]))
    api_container = next(x for x in api["spec"]["template"]["spec"]["containers"] if x["name"] == SERVER_CONTAINER)
    api_values = {f: v for f, v, _ in server_flags(c, name, api, api_container, objects)}
    worker_labels = dep["spec"]["template"]["metadata"].get("labels", {})
    services = [s["metadata"]["name"] for s in objects if s["kind"] == "Service" and labels_match(s["spec"].get("selector"), worker_labels)]
    c.check(not services, f"{name}: no Service sends calls to the workers", ", ".join(services))
    scaled = [o for o in objects if o["kind"] == "ScaledObject"]
    if name == "dev":
        c.check(dep["spec"].get("replicas", 1) == 0, "dev: no bake workers (no Redis)", f"replicas {dep['spec'].get('replicas')}")
        c.check(not scaled, "dev: no ScaledObject")
        return
    redis = values.get("redis") or ""
    c.check(bool(redis) and redis == api_values.get("redis"), f"{name}: workers and API replicas share --redis", redis)
    c.check(values.get("redis_prefix", defaults.get("redis_prefix")) == api_values.get("redis_prefix", defaults.get("redis_prefix")),
            f"{name}: workers and API replicas share --redis_prefix")
    c.check(api_values.get("role") == "api", f"{name}: the API replicas run --role=api", str(api_values.get("role")))
    hpa_targets = [h["spec"]["scaleTargetRef"]["name"] for h in objects if h["kind"] == "HorizontalPodAutoscaler"]
    c.check(dep["metadata"]["name"] not in hpa_targets and api["metadata"]["name"] in hpa_targets,
            f"{name}: the HPA scales the API replicas, not the workers", ", ".join(hpa_targets))
    if not c.check(len(scaled) == 1 and scaled[0]["apiVersion"].startswith("keda.sh/"),
                   f"{name}: a KEDA ScaledObject", ", ".join(o["apiVersion"] for o in scaled)):
        return
    spec = scaled[0]["spec"]
    scaled_count(c, name, dep, objects)
    c.check(spec["scaleTargetRef"]["name"] == dep["metadata"]["name"] and spec["scaleTargetRef"].get("kind", "Deployment") == "Deployment",
            f"{name}: the ScaledObject scales the worker Deployment", str(spec["scaleTargetRef"]))
    c.check(spec.get("minReplicaCount", 0) >= 1 and spec.get("maxReplicaCount", 100) > spec.get("minReplicaCount", 0),
            f"{name}: the workers scale from at least one, with room to grow",
            f"{spec.get('minReplicaCount')}..{spec.get('maxReplicaCount')}")
    triggers = [t for t in spec.get("triggers", []) if t.get("type") == "redis-streams"]
    if not c.check(len(triggers) == 1, f"{name}: one redis-streams trigger"):
        return
    meta = triggers[0]["metadata"]
    prefix = values.get("redis_prefix", defaults.get("redis_prefix", ""))
    c.check(meta.get("stream") == prefix + QUEUE_STREAM_SUFFIX, f"{name}: the trigger's stream is the server's",
            f"{meta.get('stream')} vs {prefix + QUEUE_STREAM_SUFFIX}")
    # The count to scale on: the stream's length. The server deletes an entry once its bake is
    # done, so XLEN is the bakes queued or running. The group's pending entries are the bakes
    # being run, one per worker, so a pendingEntriesCount target could never add a worker; and
    # KEDA counts pending entries whenever a consumerGroup is given.
    c.check("consumerGroup" not in meta and "pendingEntriesCount" not in meta and "lagCount" not in meta,
            f"{name}: the trigger scales on the stream's length, not the consumer group's pending entries",
            str({k: v for k, v in meta.items() if k in ("consumerGroup", "pendingEntriesCount", "lagCount")}))
    host, _, port = redis.rpartition(":")
    address = meta.get("address", f"{meta.get('host')}:{meta.get('port')}")
    a_host, _, a_port = address.rpartition(":")
    namespace = dep["metadata"].get("namespace", "default")
    c.check(a_port == port and a_host in (f"{host}.{namespace}.svc.cluster.local", f"{host}.{namespace}.svc", f"{host}.{namespace}"),
            f"{name}: the trigger's address is --redis as a DNS name KEDA resolves from its namespace", f"{address} vs {redis}")
    length = meta.get("streamLength")
    c.check(str(length).isdigit() and int(length) >= 1, f"{name}: streamLength is a positive number", str(length))


def check_envoy(c, repo, prod):
    import yaml
    path = os.path.join(repo, "deploy", "k8s", "routing", "envoy-ring-hash.yaml")
    with open(path) as f:
        config = yaml.safe_load(f)
    clusters = {cl["name"]: cl for cl in config["static_resources"]["clusters"]}
    routes = []
    for listener in config["static_resources"]["listeners"]:
        for chain in listener["filter_chains"]:
            for flt in chain["filters"]:
                for vh in flt.get("typed_config", {}).get("route_config", {}).get("virtual_hosts", []):
                    routes += [r["route"] for r in vh["routes"] if "route" in r]
    c.check(bool(routes) and all(any(h.get("header", {}).get("header_name") == "x-rig-id" for h in r.get("hash_policy", []))
                                 for r in routes), "envoy: every route hashes on the x-rig-id header")
    c.check(all(r.get("timeout") == "0s" for r in routes), "envoy: routes have no timeout (pose sessions are long streams)")
    for r in routes:
        cl = clusters.get(r["cluster"])
        if not c.check(cl is not None, f"envoy: route cluster {r['cluster']} exists"):
            continue
        c.check(cl.get("lb_policy") == "RING_HASH" and cl.get("type") == "STRICT_DNS",
                f"envoy: cluster {cl['name']} is STRICT_DNS with RING_HASH", f"{cl.get('type')} {cl.get('lb_policy')}")
        if prod.get("tls"):
            socket = cl.get("transport_socket", {})
            context = socket.get("typed_config", {}).get("common_tls_context", {})
            c.check(socket.get("name") == "envoy.transport_sockets.tls"
                    and bool(context.get("validation_context", {}).get("trusted_ca")),
                    f"envoy: cluster {cl['name']} speaks TLS to the prod replicas (they serve --tls_cert) and checks "
                    "their certificate", str(socket)[:200])
            if prod.get("client_ca"):
                c.check(bool(context.get("tls_certificates")), f"envoy: cluster {cl['name']} shows a client certificate "
                        "(the prod replicas ask for one: --tls_client_ca)")
        for group in cl["load_assignment"]["endpoints"]:
            for ep in group["lb_endpoints"]:
                sa = ep["endpoint"]["address"]["socket_address"]
                wanted = [f"{h}.{prod['namespace']}.svc.cluster.local" for h in prod["headless"]]
                c.check(sa["address"] in wanted and sa["port_value"] == prod["port"],
                        "envoy: upstream is the prod headless Service on the server port",
                        f"{sa['address']}:{sa['port_value']} vs {wanted}:{prod['port']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", required=True)
    ap.add_argument("--server", required=True, help="the skinning-server binary")
    ap.add_argument("--kubectl", default=os.environ.get("KUBECTL") or shutil.which("kubectl"))
    args = ap.parse_args()

    try:
        import yaml
    except ImportError:
        unavailable("PyYAML (python3-yaml) for /usr/bin/python3")
    if not args.kubectl or not os.access(args.kubectl, os.X_OK):
        unavailable("kubectl (kubernetes-client)")

    c = Checker()
    known, defaults = known_server_flags(args.server)
    if not c.check("address" in known and "drain_seconds" in known, "server --helpfull lists its flags",
                   f"{len(known)} flags from {args.server}"):
        return 1
    check_kustomizations(c, args.repo)

    summaries = {}
    for overlay in OVERLAYS:
        rc, out, err = render(args.kubectl, args.repo, overlay)
        if not c.check(rc == 0, f"{overlay}: kubectl kustomize renders offline", err.strip()[-500:] if rc else ""):
            continue
        objects = [o for o in yaml.safe_load_all(out) if o]
        c.check(bool(objects), f"{overlay}: rendered {len(objects)} objects")
        summaries[overlay] = check_overlay(c, overlay, objects, known, defaults)
        check_workers(c, overlay, objects, known, defaults)
        check_network_policies(c, overlay, objects)

    if summaries.get("prod"):
        check_envoy(c, args.repo, summaries["prod"])

    unused = sorted(set(PLANNED_FLAGS) - PLANNED_FLAGS_SEEN - known)
    c.check(not unused, "every planned flag in the allowlist is used (drop stale entries)", ", ".join(unused))
    already = sorted(set(PLANNED_FLAGS) & known)
    if already:
        print(f"NOTE the server now knows {', '.join('--' + f for f in already)}: drop them from PLANNED_FLAGS")

    print(f"{'FAILED' if c.failures else 'OK'}: {c.failures} failing check(s)")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())

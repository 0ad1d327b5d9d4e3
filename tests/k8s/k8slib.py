"""Helpers of the Kubernetes provider's tests: the namespace and images of the test cluster, a
broker's environment for it (k8s_env), and PodView: this namespace's sandbox pods in the Engine
API's shapes (sandboxlib.view_of), so that tests/integration's bodies run against pods."""

import os
import sys
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

from brokerlib import Broker, wait_until  # noqa: E402
from sdklib import API_KEYS_ENV  # noqa: E402
from test_cluster import IMAGE  # noqa: E402

AGENT_IMAGE = "sandbox-broker/agent:latest"
BASE_IMAGE = "sandbox-broker/base:latest"
MULTI_IMAGE = "sandbox-broker/multiuser:latest"
IMAGES = (IMAGE, AGENT_IMAGE, BASE_IMAGE, MULTI_IMAGE)
NS = "sbk-it"
L = "sandbox-broker.io/"


def k8s_env(cluster, **env):
    """A broker's environment for the test cluster: the Kubernetes provider with the admin client
    certificate, the agent in every pod, the OpenSandbox tenants of sdklib."""
    e = cluster["env"]
    cfg = {"SANDBOX_PROVIDER": "kubernetes", "BROKER_CAPACITY": "4",
           "OPENSANDBOX_API_KEYS": API_KEYS_ENV,
           "KUBERNETES_API_URL": e["K8S_API"], "KUBERNETES_CA_FILE": e["K8S_CA"],
           "KUBERNETES_CERT_FILE": e["K8S_ADMIN_CERT"], "KUBERNETES_KEY_FILE": e["K8S_ADMIN_KEY"],
           "KUBERNETES_NAMESPACE": NS, "KUBERNETES_IMAGE_PULL_POLICY": "Never",
           "KUBERNETES_AGENT_IMAGE": AGENT_IMAGE, "KUBERNETES_POD_WAIT_MS": "60000",
           "IDLE_POLICY": "stop_keep"}
    cfg.update({k: str(v) for k, v in env.items() if v is not None})
    for k in [k for k, v in env.items() if v is None]:  # None: the setting left unset
        cfg.pop(k, None)
    return cfg


def delete_pods_of(api, prefix):
    """Every pod of this broker's prefix deleted (what a test's broker left), at once."""
    for p in PodView(api).pods(prefix):
        api.call("DELETE", "/api/v1/namespaces/%s/pods/%s" % (NS, p["metadata"]["name"]),
                 {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})


def start_broker(cluster, services, like=None, **env):
    """A running brokerlib.Broker on the cluster (k8s_env), with `sandbox_view` (PodView).
    like: another such broker whose Redis key prefix, Kafka topic and consumer group this one
    shares: a second broker node (its own nginx, handlers, supervisor, relay and AGENT_DIR) of
    the same deployment."""
    if like is not None:
        env = dict(env, REDIS_KEY_PREFIX=like.prefix, KAFKA_TOPIC=like.config["KAFKA_TOPIC"],
                   KAFKA_GROUP=like.config["KAFKA_GROUP"])
    b = Broker(services, os.path.join(cluster["state"], "it", "broker-" + uuid.uuid4().hex[:6]),
               **k8s_env(cluster, **env))
    if like is not None:
        b.prefix = like.prefix
    b.sandbox_view = PodView(cluster["api"])
    b.up()
    return b


def stop_broker(cluster, b):
    """b down, then every pod of its prefix deleted and waited away."""
    try:
        b.down()
    finally:
        delete_pods_of(cluster["api"], b.prefix)
        wait_until(lambda: not PodView(cluster["api"]).pods(b.prefix), 60, 0.2,
                   "the pods of %s gone" % b.prefix)


class PodView:
    """This namespace's sandbox pods as sandboxlib.Docker shows containers: list() entries with
    Id (the pod's name: the record's ref), Labels (ours, in Docker's io.sandbox-broker.* form, the
    prefix from its annotation) and State; inspect() with Name, State.Running/Status and
    Config.Labels/Image. A pod that runs is "running", one that ended or is being deleted
    "exited", one not started yet "created"; a pod gone is None. `stops` is False: a pod cannot
    be stopped and kept (docs/KUBERNETES.md)."""

    stops = False

    def __init__(self, api):
        self.api = api

    def pods(self, prefix=None, sandbox_id=None):
        sel = L + "managed=1"
        if sandbox_id is not None:
            sel += "," + L + "sandbox-id=" + sandbox_id
        code, body = self.api.call("GET", "/api/v1/namespaces/%s/pods?labelSelector=%s"
                                   % (NS, urllib.parse.quote(sel)))
        assert code == 200, body
        return [p for p in body["items"]
                if prefix is None or p["metadata"].get("annotations", {}).get(L + "prefix") == prefix]

    @staticmethod
    def status(pod):
        st = pod.get("status", {})
        if pod["metadata"].get("deletionTimestamp") or st.get("phase") in ("Succeeded", "Failed"):
            return "exited"
        if st.get("phase") != "Running":
            return "created"
        for cs in st.get("containerStatuses", []):
            if cs["name"] == "sandbox" and "terminated" in cs.get("state", {}):
                return "exited"
        return "running"

    @staticmethod
    def labels(pod):
        md = pod["metadata"]
        out = {"io.sandbox-broker." + k[len(L):]: v
               for k, v in md.get("labels", {}).items() if k.startswith(L)}
        if L + "prefix" in md.get("annotations", {}):
            out["io.sandbox-broker.prefix"] = md["annotations"][L + "prefix"]
        return out

    def list(self, prefix=None, sandbox_id=None, all=True):
        return [{"Id": p["metadata"]["name"], "Names": ["/" + p["metadata"]["name"]],
                 "Labels": self.labels(p), "State": self.status(p)}
                for p in self.pods(prefix, sandbox_id)]

    def inspect(self, name):
        code, pod = self.api.call("GET", "/api/v1/namespaces/%s/pods/%s" % (NS, name))
        if code == 404:
            return None
        assert code == 200, pod
        s = self.status(pod)
        main = [c for c in pod["spec"]["containers"] if c["name"] == "sandbox"][0]
        return {"Id": name, "Name": "/" + name, "Pod": pod,
                "State": {"Running": s == "running", "Status": s},
                "Config": {"Labels": self.labels(pod), "Image": main["image"]}}

    def state(self, name):
        c = self.inspect(name)
        return None if c is None else c["State"]["Status"]

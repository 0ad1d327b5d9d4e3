"""OpenSandbox templates (the /templates routes and CreateSandboxRequest
.templateId of opensandbox-server 1.1.1; docs/OPENSANDBOX.md, "Templates"),
through nginx and FastCGI, against real Redis and dockerd.

The official Python SDK's own calls (SandboxManagerSync.create_template,
get_template, list_templates, delete_template, SandboxSync
.create_from_template; the async SandboxManager too) make, read, list, use
and delete a template, and the sandbox made from it runs the template's
image, entrypoint, env and limits (read in the container dockerd made) with
the request's metadata; a template is its tenant's alone (404 on every
route and in a create, and another tenant's delete changes nothing); bad
bodies, a create that names a workload field beside templateId and the
per-tenant cap are 4xx JSON that change nothing in Redis.
"""
import json
from datetime import timedelta

import pytest

from sandboxlib import BASE_IMAGE, DOCKER, require_docker
from sdklib import KEY, OSB, PROVISION_TIMEOUT, check_osb_error, start_osb_broker

require_docker()

MAX_PER_TENANT = 3
TEMPLATE = {"image": BASE_IMAGE, "publish": "s3://tpl-test/publish",
            "entrypoint": ["sleep", "infinity"], "env": {"TPL_GREETING": "from the template"},
            "resourceLimits": {"cpu": "250m", "memory": "160Mi"}, "metadata": {"team": "tpl"}}


@pytest.fixture(scope="module")
def tb(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=4,
                            TEMPLATE_MAX_PER_TENANT=MAX_PER_TENANT)


@pytest.fixture(autouse=True)
def _logs_on_failure(request, tb):
    request.node._it_brokers = [tb]


def tpl_keys(b):
    """Every Redis key of b's templates, with its content."""
    out = {}
    for k in b.redis.scan_iter(match=b.prefix + "template*", count=1000):
        out[k] = b.redis.hgetall(k) if b.redis.type(k) == "hash" else b.redis.zrange(k, 0, -1)
    return out


def tpl_create(osb, body, **kw):
    return osb.call("POST", "/templates", body, **kw)


def check_template(t, body):
    assert t["templateId"].startswith("tpl-") and len(t["templateId"]) == 36, t
    for k in ("image", "publish", "entrypoint", "env", "resourceLimits", "metadata"):
        if k in body:
            assert t[k] == body[k], (k, t)
    assert t["format"] == body.get("format", "overlaybd"), t
    assert t["status"] == {"phase": "Succeeded"}, t
    assert t["createdAt"].endswith("Z") and t["updatedAt"] == t["createdAt"], t


def sdk_config(b, tenant):
    from opensandbox.config import ConnectionConfigSync
    return ConnectionConfigSync(domain="127.0.0.1:%d" % b.port, api_key=KEY[tenant],
                                request_timeout=timedelta(seconds=60))


# ------------------------------------------------------------------ the SDK

def test_python_sdk_templates(tb):
    """create_template -> get_template -> list_templates (metadata filter,
    pages) -> create_from_template (the sandbox runs the template's
    workload with the request's metadata) -> delete_template (the sandbox
    goes on; the template is gone: 404 to get and to a create)."""
    pytest.importorskip("opensandbox")
    from opensandbox import SandboxSync
    from opensandbox.exceptions import SandboxApiException
    from opensandbox.models.templates import CreateTemplateRequest, TemplateFilter
    from opensandbox.sync.manager import SandboxManagerSync

    cfg = sdk_config(tb, "alpha")
    mgr = SandboxManagerSync.create(cfg)
    sbx = None
    try:
        req = CreateTemplateRequest(image=BASE_IMAGE, publish="s3://tpl-test/publish",
                                    entrypoint=["sleep", "infinity"],
                                    env={"TPL_GREETING": "from the template"},
                                    resource_limits={"cpu": "250m", "memory": "160Mi"},
                                    metadata={"team": "tpl", "kind": "sdk"})
        info = mgr.create_template(req)
        assert info.status.phase == "Succeeded" and info.image == BASE_IMAGE, info
        assert info.format == "overlaybd" and info.env == {"TPL_GREETING": "from the template"}, info
        other = mgr.create_template(CreateTemplateRequest(image=BASE_IMAGE, publish="p",
                                                          metadata={"team": "other"}))
        got = mgr.get_template(info.template_id)
        assert got.template_id == info.template_id and got.entrypoint == ["sleep", "infinity"], got
        assert got.resource_limits == {"cpu": "250m", "memory": "160Mi"}, got
        page = mgr.list_templates(TemplateFilter(metadata={"team": "tpl"}))
        assert [t.template_id for t in page.template_infos] == [info.template_id], page
        page = mgr.list_templates(TemplateFilter(page=1, page_size=1))
        assert page.pagination.total_items == 2 and page.pagination.has_next_page, page
        assert [t.template_id for t in page.template_infos] == [other.template_id], page  # newest first

        sbx = SandboxSync.create_from_template(info.template_id, timeout=timedelta(minutes=10),
                                               metadata={"run": "from-template"}, connection_config=cfg,
                                               ready_timeout=timedelta(seconds=PROVISION_TIMEOUT))
        ex = sbx.commands.run("echo \"$TPL_GREETING\"")
        assert ex.exit_code == 0, ex
        assert "".join(m.text for m in ex.logs.stdout).strip() == "from the template", ex
        sinfo = sbx.get_info()
        assert sinfo.metadata.get("run") == "from-template" and "team" not in sinfo.metadata, sinfo
        assert sinfo.image.image == BASE_IMAGE, sinfo
        # the container dockerd made: the template's limits and entrypoint
        c = DOCKER.inspect("sb-" + sbx.id)
        assert c["HostConfig"]["NanoCpus"] == 250_000_000, c["HostConfig"]
        assert c["HostConfig"]["Memory"] == 160 * 1024 * 1024, c["HostConfig"]
        assert c["Config"]["Image"] == BASE_IMAGE, c["Config"]
        # the SDK routes a template sandbox's egress policy through the
        # lifecycle API (/sandboxes/{id}/networkpolicy): the same policy
        from opensandbox.models.sandboxes import NetworkRule
        sbx.patch_egress_rules([NetworkRule(action="allow", target="tpl.example.test")])
        pol = sbx.get_egress_policy().model_dump(mode="json", exclude_none=True)
        assert {"action": "allow", "target": "tpl.example.test"} in pol["egress"], pol

        mgr.delete_template(info.template_id)
        with pytest.raises(SandboxApiException) as e:
            mgr.get_template(info.template_id)
        assert e.value.status_code == 404, e.value
        # the sandbox made from it goes on
        assert sbx.commands.run("true").exit_code == 0
        with pytest.raises(Exception) as e:
            SandboxSync.create_from_template(info.template_id, timeout=timedelta(minutes=10),
                                             connection_config=cfg, skip_health_check=True)
        assert "404" in str(e.value) or getattr(e.value, "status_code", None) == 404, e.value
        mgr.delete_template(other.template_id)
        assert mgr.list_templates(TemplateFilter()).template_infos == []
        assert tpl_keys(tb) == {}, tpl_keys(tb)
    finally:
        if sbx is not None:
            sbx.kill()
        mgr.close()


def test_python_sdk_async_manager(tb):
    """The async SandboxManager's template calls, the same routes."""
    pytest.importorskip("opensandbox")
    import asyncio
    from opensandbox.config import ConnectionConfig
    from opensandbox.manager import SandboxManager
    from opensandbox.models.templates import CreateTemplateRequest, TemplateFilter

    async def run():
        cfg = ConnectionConfig(domain="127.0.0.1:%d" % tb.port, api_key=KEY["golf"],
                               request_timeout=timedelta(seconds=60))
        mgr = await SandboxManager.create(cfg)
        try:
            t = await mgr.create_template(CreateTemplateRequest(image=BASE_IMAGE, publish="p", format="native"))
            assert t.format == "native" and t.status.phase == "Succeeded", t
            assert (await mgr.get_template(t.template_id)).template_id == t.template_id
            page = await mgr.list_templates(TemplateFilter())
            assert [x.template_id for x in page.template_infos] == [t.template_id], page
            await mgr.delete_template(t.template_id)
            assert (await mgr.list_templates(TemplateFilter())).template_infos == []
        finally:
            await mgr.close()
    asyncio.run(run())


# ------------------------------------------------------------------ tenants

def test_another_tenants_template_does_not_exist(tb):
    alpha, bravo = OSB(tb, "alpha"), OSB(tb, "bravo")
    r = tpl_create(alpha, TEMPLATE)
    assert r.status == 201, r
    check_template(r.json, TEMPLATE)
    tid = r.json["templateId"]
    assert r.headers.get("Location") == "/v1/templates/" + tid, r.headers
    try:
        before = tpl_keys(tb)
        check_osb_error(bravo.call("GET", "/templates/" + tid), 404)
        check_osb_error(bravo.call("DELETE", "/templates/" + tid), 404)
        lst = bravo.call("GET", "/templates")
        assert lst.status == 200 and lst.json["items"] == [], lst
        assert lst.json["pagination"]["totalItems"] == 0, lst
        n = len(bravo.list().json["items"])
        check_osb_error(bravo.create_raw({"templateId": tid, "timeout": 120}), 404)
        assert len(bravo.list().json["items"]) == n
        assert tpl_keys(tb) == before
        g = alpha.call("GET", "/templates/" + tid)
        assert g.status == 200 and g.json == r.json, g
    finally:
        assert alpha.call("DELETE", "/templates/" + tid).status == 204
    check_osb_error(alpha.call("DELETE", "/templates/" + tid), 404)


# ------------------------------------------------------------------ bad input

BAD_TEMPLATES = [
    ({}, "image"),
    ({"publish": "p"}, "image"),
    ({"image": "  ", "publish": "p"}, "image"),
    ({"image": BASE_IMAGE}, "publish"),
    ({"image": BASE_IMAGE, "publish": ""}, "publish"),
    ({"image": BASE_IMAGE, "publish": "p" * 1025}, "publish"),
    ({"image": "x" * 256, "publish": "p"}, "image"),
    ({"image": BASE_IMAGE, "publish": "p", "name": "extra"}, "name"),
    ({"image": BASE_IMAGE, "publish": "p", "format": "qcow2"}, "format"),
    ({"image": BASE_IMAGE, "publish": "p", "resourceLimits": {"gpu": "1"}}, "gpu"),
    ({"image": BASE_IMAGE, "publish": "p", "resourceLimits": {"cpu": 2}}, "cpu"),
    ({"image": BASE_IMAGE, "publish": "p", "resourceLimits": {"memory": "lots"}}, "memory"),
    ({"image": BASE_IMAGE, "publish": "p", "env": {"1BAD": "x"}}, "env"),
    ({"image": BASE_IMAGE, "publish": "p", "env": {"A": 1}}, "env"),
    ({"image": BASE_IMAGE, "publish": "p", "entrypoint": []}, "entrypoint"),
    ({"image": BASE_IMAGE, "publish": "p", "entrypoint": "sleep"}, "entrypoint"),
    ({"image": BASE_IMAGE, "publish": "p", "metadata": {"opensandbox.io/x": "y"}}, "metadata"),
    ({"image": BASE_IMAGE, "publish": "p", "metadata": {"k": "v" * 64}}, "metadata"),
    ({"image": BASE_IMAGE, "publish": "p", "readiness": {"warmupSeconds": -1}}, "warmupSeconds"),
    ({"image": BASE_IMAGE, "publish": "p", "readiness": {"probe": 5}}, "probe"),
    ({"image": BASE_IMAGE, "publish": "p", "readiness": "soon"}, "readiness"),
    ({"image": BASE_IMAGE, "publish": "p", "env": {"V%d" % i: "x" for i in range(200)}}, "env"),
]


@pytest.mark.parametrize("body,word", BAD_TEMPLATES, ids=range(len(BAD_TEMPLATES)))
def test_bad_template_is_400_and_stores_nothing(tb, body, word):
    osb = OSB(tb, "charlie")
    r = tpl_create(osb, body)
    check_osb_error(r, 400)
    assert word in r.json["message"], r.json
    assert tpl_keys(tb) == {}, tpl_keys(tb)


def test_bad_bodies_and_ids(tb):
    osb = OSB(tb, "charlie")
    for raw in ("not json", "[1, 2]", json.dumps({"image": BASE_IMAGE, "publish": "p"}) + "x"):
        r = osb.call("POST", "/templates", raw)
        assert 400 <= r.status < 500 and r.json and r.json.get("code"), r
    for bad in ("tpl-0123", "tpl_0123456789abcdef0123456789abcdef", "..%2F..%2Fetc",
                "TPL-0123456789ABCDEF0123456789ABCDEF", "x" * 60):
        check_osb_error(osb.call("GET", "/templates/" + bad), 404)
        check_osb_error(osb.call("DELETE", "/templates/" + bad), 404)
    for q in ("page=0", "pageSize=201", "pageSize=x", "metadata=%3Dv", "metadata=" + "%26a%3Db" * 17):
        check_osb_error(osb.call("GET", "/templates?" + q), 400)
    check_osb_error(osb.call("GET", "/templates", key="no-such-key"), 401)
    assert tpl_keys(tb) == {}, tpl_keys(tb)


def test_create_with_template_refuses_workload_fields(tb):
    """templateId with a workload field, without a timeout, or naming no
    template this tenant has: 4xx, no sandbox, no record."""
    osb = OSB(tb, "delta")
    r = tpl_create(osb, TEMPLATE)
    assert r.status == 201, r
    tid = r.json["templateId"]
    try:
        n = len(osb.list().json["items"])
        before = set(tb.redis.keys(tb.prefix + "sandbox:*"))
        for extra, word in ((("image", {"uri": BASE_IMAGE}),), "image"), \
                ((("entrypoint", ["sh"]),), "entrypoint"), ((("env", {"A": "b"}),), "env"), \
                ((("resourceLimits", {"cpu": "1"}),), "resourceLimits"), \
                ((("snapshotId", "0" * 32),), "snapshotId"), ((("secureAccess", True),), "secureAccess"), \
                ((("volumes", []),), "volumes"), \
                ((("lifecycle", {"preStart": {"command": ["true"]}}),), "lifecycle"):
            body = dict({"templateId": tid, "timeout": 120}, **dict(extra))
            r = osb.create_raw(body)
            check_osb_error(r, 400)
            assert word in r.json["message"] and "templateId" in r.json["message"], r.json
        r = osb.create_raw({"templateId": tid})
        check_osb_error(r, 400)
        assert "timeout" in r.json["message"], r.json
        check_osb_error(osb.create_raw({"templateId": tid, "timeout": 5}), 400)
        check_osb_error(osb.create_raw({"templateId": 7, "timeout": 120}), 400)
        check_osb_error(osb.create_raw({"templateId": "tpl-" + "0" * 32, "timeout": 120}), 404)
        check_osb_error(osb.create_raw({"templateId": "../x", "timeout": 120}), 404)
        check_osb_error(osb.create_raw({"templateId": tid, "timeout": 120,
                                        "metadata": {"opensandbox.io/x": "y"}}), 400)
        assert len(osb.list().json["items"]) == n
        assert set(tb.redis.keys(tb.prefix + "sandbox:*")) == before
    finally:
        assert osb.call("DELETE", "/templates/" + tid).status == 204


def test_raw_create_from_template_with_network_policy(tb):
    """The request's own fields go with the template's workload: metadata,
    extensions and networkPolicy reach the sandbox; secureAccess false is
    no workload field."""
    osb = OSB(tb, "echo")
    r = tpl_create(osb, dict(TEMPLATE, publish="  s3://x  ", image=" " + BASE_IMAGE + " "))
    assert r.status == 201 and r.json["image"] == BASE_IMAGE and r.json["publish"] == "s3://x", r
    tid = r.json["templateId"]
    sid = None
    try:
        r = osb.create_raw({"templateId": tid, "timeout": 300, "secureAccess": False,
                            "metadata": {"via": "raw"},
                            "networkPolicy": {"defaultAction": "deny",
                                              "egress": [{"action": "allow", "target": "example.test"}]}})
        assert r.status == 202, r
        sid = r.json["id"]
        sb = osb.wait_state(sid, "Running")
        assert sb["metadata"] == {"via": "raw"} and sb["image"]["uri"] == BASE_IMAGE, sb
        assert sb["entrypoint"] == ["sleep", "infinity"], sb
        pol = osb.call("GET", "/sandboxes/%s/networkpolicy" % sid)
        assert pol.status == 200 and "example.test" in json.dumps(pol.json), pol
    finally:
        if sid:
            osb.delete(sid)
        assert osb.call("DELETE", "/templates/" + tid).status == 204


def test_per_tenant_cap(tb):
    osb = OSB(tb, "foxtrot")
    ids = []
    try:
        for _ in range(MAX_PER_TENANT):
            r = tpl_create(osb, {"image": BASE_IMAGE, "publish": "p"})
            assert r.status == 201, r
            ids.append(r.json["templateId"])
        before = tpl_keys(tb)
        r = tpl_create(osb, {"image": BASE_IMAGE, "publish": "p"})
        check_osb_error(r, 409)
        assert "TEMPLATE_MAX_PER_TENANT" in r.json["message"], r.json
        assert tpl_keys(tb) == before
        # another tenant has its own count
        r = tpl_create(OSB(tb, "hotel"), {"image": BASE_IMAGE, "publish": "p"})
        assert r.status == 201, r
        assert OSB(tb, "hotel").call("DELETE", "/templates/" + r.json["templateId"]).status == 204
        assert osb.call("DELETE", "/templates/" + ids.pop()).status == 204
        r = tpl_create(osb, {"image": BASE_IMAGE, "publish": "p"})
        assert r.status == 201, r
        ids.append(r.json["templateId"])
    finally:
        for t in ids:
            osb.call("DELETE", "/templates/" + t)
    assert tpl_keys(tb) == {}

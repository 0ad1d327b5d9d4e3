"""The routes OpenSandbox's published Python SDK calls, read from the package
itself and checked against the table docs/OPENSANDBOX.md keeps of them.

The `opensandbox` wheel on PyPI (pinned in requirements.txt) carries
generated HTTP clients for each API it speaks (opensandbox/api/<api>/api/):
every operation is a module whose _get_kwargs returns {"method": ..., "url":
...}. Those are the routes a client of that release can send, so a release
that adds one makes test_osb_fidelity's walk fail until the table says
whether the broker serves it; nothing is read from outside the repository
and its pinned packages.

The TypeScript SDK (npm `@alibaba-group/opensandbox`, pinned in
scripts/sdk-install) carries its APIs as openapi-typescript `paths`
interfaces (src/api/<api>.ts); each of its routes must be one of the
table's too (path parameters named apart, so compared as `{}`).

Run as a script, it prints the table rows for the routes the table lacks
(status `?`, for a person to decide) and the rows no route of the package
has any more.
"""

import ast
import importlib.metadata
import os
import re
import sys

PINNED = "1.1.1"  # tests/integration/requirements.txt
TS_PINNED = "0.1.11"  # scripts/sdk-install
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "OPENSANDBOX.md")
TS_SDK = os.path.join(REPO, ".cache", "node", "node_modules", "@alibaba-group", "opensandbox")
BEGIN, END = "<!-- sdk-routes -->", "<!-- /sdk-routes -->"
# the SDK's API -> where the broker serves its paths ({sid}: a sandbox)
BASES = {
    "lifecycle": "/v1",
    "diagnostic": "/v1",
    "execd": "/v1/sandboxes/{sid}/proxy/44772",
    "egress": "/v1/sandboxes/{sid}/proxy/18080",
}
# "image": served by a sandbox whose image has what the route needs (the code interpreter:
# sandbox-broker/code-interpreter), 501 NOT_IMPLEMENTED with the reason in any other
STATUSES = ("served", "501", "image")


def _package_dir():
    import opensandbox
    return os.path.dirname(opensandbox.__file__)


def _url_literal(node):
    """The path of a generated client's "url": a string, or a string's
    .format(...) call."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        node = node.func.value
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    raise ValueError("a url that is not a literal: %s" % ast.unparse(node))


def sdk_routes():
    """Sorted (api, METHOD, path) of every operation of the installed SDK's
    generated clients; path parameters as the SDK names them."""
    version = importlib.metadata.version("opensandbox")
    if version != PINNED:
        raise AssertionError("opensandbox %s is installed, the route table is of %s: pin it in "
                             "requirements.txt, or update PINNED and the table (python3 %s)"
                             % (version, PINNED, os.path.relpath(__file__, REPO)))
    root = os.path.join(_package_dir(), "api")
    routes = set()
    for api in sorted(os.listdir(root)):
        ops = os.path.join(root, api, "api")
        if not os.path.isdir(ops):
            continue
        if api not in BASES:
            raise AssertionError("the SDK speaks an API this table does not know: %s" % api)
        for top, _, files in os.walk(ops):
            for name in files:
                if not name.endswith(".py") or name == "__init__.py":
                    continue
                with open(os.path.join(top, name), encoding="utf-8") as f:
                    tree = ast.parse(f.read())
                for node in ast.walk(tree):
                    if not isinstance(node, ast.Dict):
                        continue
                    keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
                    if "method" in keys and "url" in keys:
                        d = dict(zip(keys, node.values))
                        routes.add((api, d["method"].value.upper(), _url_literal(d["url"])))
    return sorted(routes)


def ts_sdk_routes():
    """Sorted (api, METHOD, path) of the installed TypeScript SDK's
    openapi-typescript `paths` (an operation, not `?: never`)."""
    import json
    with open(os.path.join(TS_SDK, "package.json"), encoding="utf-8") as f:
        version = json.load(f)["version"]
    if version != TS_PINNED:
        raise AssertionError("@alibaba-group/opensandbox %s is installed, the route table is of %s: pin it "
                             "in scripts/sdk-install, or update TS_PINNED and the table" % (version, TS_PINNED))
    root = os.path.join(TS_SDK, "src", "api")
    routes = set()
    for name in sorted(os.listdir(root)):
        api = name[:-3]
        if not name.endswith(".ts"):
            continue
        if api not in BASES:
            raise AssertionError("the TypeScript SDK speaks an API this table does not know: %s" % api)
        with open(os.path.join(root, name), encoding="utf-8") as f:
            text = f.read()
        m = re.search(r"^export interface paths \{\n(.*?)^\}", text, re.S | re.M)
        if not m:
            raise AssertionError("%s: no `export interface paths`" % name)
        for item in re.finditer(r'^    "(/[^"]*)": \{\n(.*?)^    \};', m.group(1), re.S | re.M):
            for op in re.finditer(r"^        (get|put|post|delete|patch|head|options|trace): operations",
                                  item.group(2), re.M):
                routes.add((api, op.group(1).upper(), item.group(1)))
    if not routes:
        raise AssertionError("no route read from %s" % root)
    return sorted(routes)


def shape(route):
    """A route with its path parameters unnamed: (api, METHOD, path with {})."""
    api, method, path = route
    return api, method, re.sub(r"\{[^}]+\}", "{}", path)


def doc_table():
    """{(api, METHOD, path): (status, how)} from docs/OPENSANDBOX.md."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    m = re.search(re.escape(BEGIN) + r"(.*?)" + re.escape(END), text, re.S)
    if not m:
        raise AssertionError("docs/OPENSANDBOX.md has no %s table" % BEGIN)
    table = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("API", "") or set(cells[0]) <= set("-: "):
            continue
        api, method, path, status, how = cells
        key = (api, method, path.strip("`"))
        if key in table:
            raise AssertionError("docs/OPENSANDBOX.md lists %s twice" % (key,))
        if status not in STATUSES:
            raise AssertionError("docs/OPENSANDBOX.md: %s has status %r, not one of %s"
                                 % (key, status, STATUSES))
        table[key] = (status, how)
    return table


def row(api, method, path, status="?", how=""):
    return "| %s | %s | `%s` | %s | %s |" % (api, method, path, status, how)


def main():
    routes = sdk_routes()
    table = doc_table()
    missing = [r for r in routes if r not in table]
    stale = [k for k in table if k not in set(routes)]
    for r in missing:
        print(row(*r))
    for k in stale:
        print("stale: " + row(*k, *table[k]), file=sys.stderr)
    shapes = {shape(k) for k in table}
    ts_missing = [r for r in ts_sdk_routes() if shape(r) not in shapes]
    for r in ts_missing:
        print("TypeScript SDK only: " + row(*r))
    missing += ts_missing
    print("%d route(s) in opensandbox %s, %d listed, %d missing, %d stale"
          % (len(routes), PINNED, len(table), len(missing), len(stale)), file=sys.stderr)
    return 1 if missing or stale else 0


if __name__ == "__main__":
    sys.exit(main())

"""The short mode every scripts/bench-* has (--smoke or BENCH_SMOKE=1), for the Python ones.

A smoke run is a check that the bench still runs end to end, not a measurement: the bench
shrinks its sizes to a few seconds' worth and writes the block it would put into
docs/LOAD-CAPACITY.md to --out FILE (or, without it, to a new temp file whose path it prints),
never into docs/. tests/bench/test_benches.py runs every bench so (scripts/run-tests' bench
phase) and checks the file's figures and that nothing the bench made is left.

    import benchsmoke as smoke        # sys.path has <repo>/bench
    smoke.add_args(ap)                # --smoke, --out FILE
    a = ap.parse_args()
    smoke.apply(a, "pool", n=2, sdk=1)   # under --smoke: these sizes, no doc, an --out file
    ...
    smoke.emit(a, results, write_doc)    # --out FILE, else the doc unless --no-doc
"""
import os
import shutil
import subprocess
import sys
import tempfile

MARK = "SMOKE RUN (--smoke): a check that the bench runs, not a measurement.\n\n"


def add_args(ap):
    ap.add_argument("--smoke", action="store_true", default=os.environ.get("BENCH_SMOKE") == "1",
                    help="a few seconds' run to check the bench works; figures to --out or a temp file, "
                         "never docs/ (BENCH_SMOKE=1)")
    ap.add_argument("--out", metavar="FILE", help="write the results block to FILE instead of docs/")


def apply(a, name, **sizes):
    """Under --smoke: set the given sizes, never touch the doc, and pick an --out file."""
    if not a.smoke:
        return
    for k, v in sizes.items():
        setattr(a, k, v)
    a.no_doc = True
    if not a.out:
        fd, a.out = tempfile.mkstemp(prefix="bench-%s-smoke." % name, suffix=".md")
        os.close(fd)


def emit(a, results, write_doc, *doc_args):
    """Write the results block: to --out if given, else into the doc unless --no-doc.
    -> True when the doc was written."""
    if a.out:
        with open(a.out, "w") as f:
            f.write((MARK if a.smoke else "") + results.rstrip("\n") + "\n")
        sys.stderr.write("%s: results written to %s\n" % (os.path.basename(sys.argv[0]), a.out))
        return False
    if getattr(a, "no_doc", False):
        return False
    write_doc(results, *doc_args)
    return True


def rmtree(path):
    """Remove a bench's temp dir: first lazily unmount whatever is mounted below it, deepest first
    (sandbox-mountd's tmpfs on the agents' run directories of sandboxes that outlived the stack:
    a plain rmtree fails on those and would leave the mounts and the tree behind), then the tree."""
    path = os.path.realpath(path)
    found = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                mp = line.split()[4].replace("\\040", " ")
                if mp == path or mp.startswith(path + "/"):
                    found.append(mp)
    except OSError:
        pass
    for mp in sorted(found, key=len, reverse=True):
        subprocess.run(["umount", "-l", mp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    shutil.rmtree(path, ignore_errors=True)


def keep_tmp():
    """Whether to keep the bench's temp dir: only when asked (BENCH_KEEP=1), failed or not."""
    return os.environ.get("BENCH_KEEP") == "1"

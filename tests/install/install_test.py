#!/usr/bin/python3
"""`make install` and the installed library as an embedder meets it (issue
28 item 9, docs/api.md "Installing and linking"):

  * `make install PREFIX=P` puts include/tinylm.h, lib/libtinylm.a,
    lib/libtinylm.so.VERSION with its soname link libtinylm.so.MAJOR and
    the development link libtinylm.so, lib/pkgconfig/tinylm.pc and
    bin/tinylm under P (VERSION and MAJOR: include/tinylm.h's);
    `DESTDIR=S` stages the same files under S/P with a tinylm.pc that
    still names P, and `make uninstall` removes them again;
  * the shared library's soname is libtinylm.so.MAJOR, it needs nothing
    but libc, libm, pthreads and the dynamic loader, and it exports
    exactly the functions include/tinylm.h declares;
  * every examples/*.c builds against the installed copy with nothing but
    `pkg-config --cflags --libs tinylm` (shared) or `pkg-config --static
    --cflags --libs tinylm` with -static; the shared program needs only
    libtinylm.so.MAJOR and libc (no JSON, line editing or HTTP library),
    loads the installed library (and cannot start without it), and both
    programs pass the api-example stage's own judge (tests/api/
    example_test.py: the same ids, text and receipt id as `tinylm run` on
    the tiny golden artifact, typed errors);
  * the installed bin/tinylm, run outside the source tree, serves the chat
    page at / (compiled in): the bytes of web/server/ and web/app.css.

    install_test.py TINYLM WORKDIR     (TINYLM: the gcc build's CLI, the
                                        judge's reference)
"""

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, summary  # noqa: E402

# The system libraries the library and the programs may need: libc, libm,
# pthreads (part of libc since glibc 2.34) and the dynamic loader.
SYSTEM = re.compile(r"^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|ld-linux[-\w.]*\.so\.\d+)$")
# Each example and the judge that knows what it must print.
JUDGES = {"stream_reply": os.path.join(ROOT, "tests", "api", "example_test.py")}


def run(cmd, env=None, cwd=ROOT):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


def header_version():
    text = open(os.path.join(ROOT, "include", "tinylm.h")).read()
    part = {k: re.search(rf"^#define TL_VERSION_{k} (\d+)$", text, re.M).group(1)
            for k in ("MAJOR", "MINOR", "PATCH")}
    return f"{part['MAJOR']}.{part['MINOR']}.{part['PATCH']}", part["MAJOR"]


def header_functions():
    """The functions include/tinylm.h declares (not its callback types)."""
    text = open(os.path.join(ROOT, "include", "tinylm.h")).read()
    return set(re.findall(r"^(?:const )?[a-z_0-9]+ \*?(tl_[a-z0-9_]+)\(", text, re.M))


def dynamic(path):
    """(needed, soname, runpath) from readelf -d; None when not dynamic."""
    out = run(["readelf", "-d", path]).stdout
    if "There is no dynamic section" in out:
        return None
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    soname = re.findall(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out)
    runpath = re.findall(r"\((?:RUNPATH|RPATH)\)", out)
    return needed, soname[0] if soname else None, runpath


def install(prefix, destdir=None):
    cmd = ["make", "--no-print-directory", "CFG=gcc", "install", f"PREFIX={prefix}"]
    if destdir:
        cmd.append(f"DESTDIR={destdir}")
    return run(cmd)


def check_tree(label, root, prefix, version, major):
    """The installed files under root (= DESTDIR + PREFIX)."""
    lib = os.path.join(root, "lib")
    for rel, mode in [("include/tinylm.h", 0o644), ("lib/libtinylm.a", 0o644),
                      (f"lib/libtinylm.so.{version}", 0o755),
                      ("lib/pkgconfig/tinylm.pc", 0o644), ("bin/tinylm", 0o755)]:
        p = os.path.join(root, rel)
        ok = os.path.isfile(p) and not os.path.islink(p)
        check(f"{label}: {rel} installed, mode {mode:o}",
              ok and (os.stat(p).st_mode & 0o777) == mode,
              f"{oct(os.stat(p).st_mode & 0o777)}" if ok else "missing")
    for link, target in [(f"libtinylm.so.{major}", f"libtinylm.so.{version}"),
                         ("libtinylm.so", f"libtinylm.so.{major}")]:
        p = os.path.join(lib, link)
        got = os.readlink(p) if os.path.islink(p) else None
        check(f"{label}: lib/{link} -> {target}", got == target, f"got {got}")
    same = os.path.isfile(os.path.join(root, "include/tinylm.h")) and \
        open(os.path.join(root, "include/tinylm.h"), "rb").read() == \
        open(os.path.join(ROOT, "include/tinylm.h"), "rb").read()
    check(f"{label}: the installed header is include/tinylm.h", same)
    pc = os.path.join(lib, "pkgconfig", "tinylm.pc")
    text = open(pc).read() if os.path.isfile(pc) else ""
    check(f"{label}: tinylm.pc names PREFIX {prefix} and version {version}",
          re.search(rf"^prefix={re.escape(prefix)}$", text, re.M) is not None
          and re.search(rf"^Version: {re.escape(version)}$", text, re.M) is not None, text)


def serves_page(tinylm, work):
    """The installed CLI serves the page's files with no source tree around."""
    model = os.path.join(ROOT, "tests", "golden", "slm", "tiny-f32.slm")
    p = subprocess.Popen([tinylm, "serve", model, "--port", "0", "--parallel", "1"], cwd=work,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        m = re.search(r"listening on (http://\S+)", p.stdout.readline())
        if not check("bin/tinylm serve: prints its address", m is not None):
            return
        for path, src in [("/", "web/server/index.html"), ("/chat.js", "web/server/chat.js"),
                          ("/app.css", "web/app.css")]:
            with urllib.request.urlopen(m.group(1) + path, timeout=30) as r:
                body = r.read()
            check(f"bin/tinylm serve: GET {path} is {src}",
                  body == open(os.path.join(ROOT, src), "rb").read())
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)


def judge(name, label, program, tinylm, work, env):
    """The example's judge on program; its checks counted here, labelled."""
    script = JUDGES.get(name)
    label = f"{name} ({label})"
    if not check(f"{label}: examples/{name}.c has a judge", script is not None,
                 "add it to JUDGES"):
        return
    p = run([sys.executable, script, tinylm, program, os.path.join(work, f"judge-{name}-{label}")],
            env=env)
    n = 0
    for line in p.stdout.splitlines():
        if line.startswith("ok   "):
            check(f"{label}: {line[5:]}", True)
            n += 1
        elif line.startswith("FAIL "):
            check(f"{label}: {line[5:]}", False)
            n += 1
    check(f"{label}: the judge ran and agreed with its own tally",
          n > 0 and (p.returncode == 0) == all(not ln.startswith("FAIL ")
                                                 for ln in p.stdout.splitlines()),
          f"exit {p.returncode}, {n} checks: {p.stderr[-2000:]}")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    tinylm, work = (os.path.abspath(a) for a in sys.argv[1:])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    version, major = header_version()
    cc = os.environ.get("CC", "cc")

    # A staged install (DESTDIR) and its removal.
    stage = os.path.join(work, "stage")
    p = install("/usr/local", stage)
    if check("make install PREFIX=/usr/local DESTDIR=STAGE: exit 0", p.returncode == 0,
             p.stderr):
        check_tree("DESTDIR", os.path.join(stage, "usr", "local"), "/usr/local", version, major)
        p = run(["make", "--no-print-directory", "CFG=gcc", "uninstall", "PREFIX=/usr/local",
                 f"DESTDIR={stage}"])
        left = [os.path.relpath(os.path.join(d, f), stage)
                for d, _, fs in os.walk(stage) for f in fs]
        check("make uninstall with the same DESTDIR: exit 0, no file left",
              p.returncode == 0 and not left, f"{p.stderr} {left}")
    p = install("relative/prefix")
    check("make install with a relative PREFIX: exit 2, says PREFIX must be absolute",
          p.returncode == 2 and "PREFIX must be an absolute path" in p.stderr, p.stderr)

    # The real install the programs below use.
    prefix = os.path.join(work, "prefix")
    p = install(prefix)
    if not check("make install PREFIX=DIR: exit 0", p.returncode == 0, p.stderr):
        return summary()
    check_tree("PREFIX", prefix, prefix, version, major)
    lib = os.path.join(prefix, "lib")
    so = os.path.join(lib, f"libtinylm.so.{version}")

    d = dynamic(so)
    needed, soname, _ = d if d else ([], None, [])
    check(f"libtinylm.so: soname libtinylm.so.{major}", soname == f"libtinylm.so.{major}",
          str(soname))
    check("libtinylm.so: needs only libc, libm, pthreads and the loader",
          needed and all(SYSTEM.match(n) for n in needed), str(needed))
    out = run(["nm", "-D", "--defined-only", so]).stdout
    exported = {ln.split()[-1] for ln in out.splitlines() if ln.split()[1:2] != ["A"]}
    declared = header_functions()
    check("libtinylm.so: exports exactly the functions include/tinylm.h declares",
          len(declared) > 20 and exported == declared,
          f"not declared: {sorted(exported - declared)}; missing: {sorted(declared - exported)}")
    p = run([os.path.join(prefix, "bin", "tinylm"), "help"])
    check("bin/tinylm help: exit 0", p.returncode == 0, p.stderr)
    serves_page(os.path.join(prefix, "bin", "tinylm"), work)

    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"))
    env.pop("LD_LIBRARY_PATH", None)
    p = run(["pkg-config", "--modversion", "tinylm"], env=env)
    check(f"pkg-config --modversion tinylm: {version}", p.stdout.strip() == version,
          p.stdout + p.stderr)
    shared_flags = run(["pkg-config", "--cflags", "--libs", "tinylm"], env=env).stdout.split()
    static_flags = run(["pkg-config", "--static", "--cflags", "--libs", "tinylm"],
                       env=env).stdout.split()
    check("pkg-config --cflags --libs tinylm: the installed include and lib, -ltinylm",
          shared_flags == [f"-I{prefix}/include", f"-L{lib}", "-ltinylm"], str(shared_flags))
    check("pkg-config --static adds only -lm -lpthread",
          static_flags == shared_flags + ["-lm", "-lpthread"], str(static_flags))

    examples = sorted(glob.glob(os.path.join(ROOT, "examples", "*.c")))
    check("examples/ has programs", len(examples) > 0)
    run_env = dict(os.environ, LD_LIBRARY_PATH=lib)
    for src in examples:
        name = os.path.basename(src)[:-2]
        warn = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wpedantic"]
        shared = os.path.join(work, f"{name}-shared")
        static = os.path.join(work, f"{name}-static")
        p = run([cc, *warn, src, *shared_flags, "-o", shared], env=env, cwd=work)
        shared_ok = check(f"{name}: builds with pkg-config --cflags --libs tinylm alone",
                          p.returncode == 0, p.stderr)
        p = run([cc, *warn, "-static", src, *static_flags, "-o", static], env=env, cwd=work)
        static_ok = check(f"{name}: builds -static with pkg-config --static alone",
                          p.returncode == 0, p.stderr)
        if shared_ok:
            d = dynamic(shared)
            needed, _, runpath = d if d else ([], None, [])
            others = [n for n in needed if n != f"libtinylm.so.{major}"]
            check(f"{name} (shared): needs libtinylm.so.{major} and libc alone, no run path",
                  f"libtinylm.so.{major}" in needed and all(SYSTEM.match(n) for n in others)
                  and not runpath, f"{needed} {runpath}")
            p = run([shared], env=dict(env))
            check(f"{name} (shared): cannot start without the installed library",
                  p.returncode == 127 and f"libtinylm.so.{major}" in p.stderr, p.stderr)
            p = run(["ldd", shared], env=run_env)
            check(f"{name} (shared): LD_LIBRARY_PATH loads the installed library",
                  f"libtinylm.so.{major} => {lib}/libtinylm.so.{major}" in p.stdout, p.stdout)
            judge(name, "shared", shared, tinylm, work, run_env)
        if static_ok:
            check(f"{name} (static): no dynamic section", dynamic(static) is None)
            judge(name, "static", static, tinylm, work, env)
    return summary()


if __name__ == "__main__":
    sys.exit(main())

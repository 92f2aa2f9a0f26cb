#!/usr/bin/python3
"""The README says what the tree does (issue 28 item 8), checked against
the tree itself rather than kept in step by hand:

  * its list of the Debian packages scripts/setup.sh installs is exactly
    setup.sh's list (the --demo-train extras aside);
  * its command block ("## The command line") names every command
    `tinylm help` lists, and for each command every flag that command's own
    usage (`tinylm help COMMAND`) names;
  * each tokenizer example it shows (`tinylm encode|decode tok.slm ...`
    with the output in a comment) prints exactly that output, run on the
    tokenizer artifact of the real Qwen3 tokenizer (TOK_SLM).

    readme_test.py TINYLM TOK_SLM
"""

import shlex

import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, summary  # noqa: E402

FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])")


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def packages_check(readme):
    setup = read("scripts/setup.sh")
    m = re.search(r"^packages=\(([^)]*)\)", setup, re.M)
    want = set(m.group(1).split()) if m else set()
    m = re.search(r"installs missing Debian packages\s*\(([^)]*)\)", readme)
    got = {p.strip() for p in m.group(1).replace("\n", " ").split(",")} if m else set()
    check("setup.sh's package list is found", len(want) > 10, str(len(want)))
    check("the README lists exactly the packages setup.sh installs", got == want,
          f"missing {sorted(want - got)}, extra {sorted(got - want)}")


def command_block(readme):
    """The README's command lines, by command: each `tinylm CMD` line with
    the indented lines that continue it."""
    m = re.search(r"^## The command line\n+```\n(.*?)```", readme, re.M | re.S)
    blocks, cmd = {}, None
    for line in (m.group(1) if m else "").split("\n"):
        w = re.match(r"tinylm ([a-z]+)", line)
        if w:
            cmd = w.group(1)
        if cmd:
            blocks[cmd] = blocks.get(cmd, "") + line + "\n"
    return blocks


def usage_flags(text):
    """The flags a usage names, as groups of aliases ("-t, --threads N" is
    one): those of the synopsis (the usage line and the bracketed lines
    continuing it) and those that open a line of the option table; not
    flags that its prose mentions (another command's, an oracle's)."""
    groups, synopsis = [], True
    for line in text.split("\n"):
        if synopsis and (line.startswith("usage:") or re.match(r"\s+[\[(]|\s+tinylm ", line)):
            groups += [[f] for f in FLAG.findall(line)]
            continue
        synopsis = False
        # "  -t, --threads N  ...": flags (aliases), a value, then the text;
        # not a sentence that begins with a flag ("-t N and --mmap as for run")
        m = re.match(r"\s{2,4}(-[\w-]+(?:, -[\w-]+)*(?: [A-Z][A-Z0-9._|-]*)?)(?:\s{2,}|$)", line)
        if m:
            groups.append(FLAG.findall(m.group(1)))
    seen, out = set(), []
    for g in groups:
        key = tuple(sorted(g))
        if g and key not in seen and not set(g) & {"-h", "--help"}:
            seen.add(key)
            out.append(g)
    # a flag of the synopsis that an option line names with its alias is one flag
    return [g for g in out if not (len(g) == 1 and any(len(h) > 1 and g[0] in h for h in out))]


def commands_check(tinylm, readme):
    p = subprocess.run([tinylm, "help"], capture_output=True, text=True)
    commands = re.findall(r"^  ([a-z]+)\s", p.stdout, re.M)
    check("tinylm help lists the commands", p.returncode == 0 and len(commands) > 10,
          p.stdout[-300:])
    blocks = command_block(readme)
    for cmd in commands:
        if not check(f"the README's command block has `tinylm {cmd}`", cmd in blocks):
            continue
        u = subprocess.run([tinylm, "help", cmd], capture_output=True, text=True)
        if cmd in ("help", "version"):
            continue
        groups = usage_flags(u.stdout)
        named = lambda f: re.search(r"(?<![\w-])" + re.escape(f) + r"(?![\w-])", blocks[cmd])
        missing = [" / ".join(g) for g in groups if not any(named(f) for f in g)]
        check(f"tinylm {cmd}: every flag of its usage is in the README ({len(groups)} flags)",
              u.returncode == 0 and groups and not missing, f"missing {missing}")


def examples_check(tinylm, tok, readme):
    """`build/gcc/tinylm encode|decode tok.slm ARGS` lines of the README with
    their output after `# `, on the same line or the next (a trailing
    "   (note)" is the README's, not the output's)."""
    lines = readme.split("\n")
    seen = 0
    for i, line in enumerate(lines):
        m = re.match(r"build/gcc/tinylm (encode|decode) tok\.slm (.*?)(?:\s+# (.*))?$", line)
        if not m:
            continue
        want = m.group(3)
        if want is None and i + 1 < len(lines) and lines[i + 1].startswith("# "):
            want = lines[i + 1][2:]
        if want is None:
            continue
        want = re.sub(r"\s{2,}\(.*\)$", "", want)
        p = subprocess.run([tinylm, m.group(1), tok] + shlex.split(m.group(2)),
                           capture_output=True, text=True)
        check(f"README example `tinylm {m.group(1)} tok.slm {m.group(2)}` prints what it shows",
              p.returncode == 0 and p.stdout.rstrip("\n") == want,
              f"prints {p.stdout!r}, the README shows {want!r}")
        seen += 1
    check("the README's tokenizer examples were found", seen >= 2, str(seen))


def main():
    tinylm, tok = sys.argv[1], sys.argv[2]
    readme = read("README.md")
    packages_check(readme)
    commands_check(tinylm, readme)
    examples_check(tinylm, tok, readme)
    return summary()


if __name__ == "__main__":
    sys.exit(main())

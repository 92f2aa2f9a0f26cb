#!/usr/bin/python3
"""Every reference the repository's own text makes to a file of the
repository resolves (issue 28 item 8), so a reader who follows one finds
it, and a rename that forgets one fails here:

  * every relative Markdown link and image in a tracked .md file
    ([text](path), ![alt](path); anchors and queries stripped) names a file
    or directory that exists, relative to the .md file;
  * every repository path quoted in a tracked text file (source, scripts,
    docs: `src/...`, `tests/...`, `tools/...`, `docs/...`, `scripts/...`,
    `bench/...`, `examples/...`, `include/...`, `web/...`, ending in a
    file extension; globs and build outputs left out) exists; in docs/
    a bare `NAME.md` is a sibling document and must exist there;
  * nothing points outside the repository for its design or its measured
    facts (`DESIGN.md`, `shared/notes/`): a fresh clone has neither.

    links_test.py            (from anywhere; reads `git ls-files`)
"""

import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from checks import check, summary  # noqa: E402

TEXT = (".c", ".h", ".py", ".sh", ".mjs", ".js", ".md", ".html", ".css", "Makefile", ".run")
MD_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:src|tests|tools|docs|scripts|bench|examples|include|web)/[A-Za-z0-9_./-]*"
    r"[A-Za-z0-9_-]\.(?:c|h|py|sh|mjs|js|md|json|jsonl|cbor|html|txt|xz|png))(?![\w*])")
SIBLING_MD = re.compile(r"(?<![\w./-])([a-z0-9][a-z0-9_-]*\.md)\b")
OUTSIDE = re.compile(r"DESIGN\.md|shared/notes/")
# Paths of other projects quoted as such (transformers' sources).
FOREIGN = ("src/transformers/",)
INLINE_CODE = re.compile(r"`[^`]*`")


def tracked():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True, check=True)
    return [p for p in out.stdout.decode().split("\0") if p and p.endswith(TEXT)]


def main():
    files = tracked()
    check("the repository's text files are listed", len(files) > 100, str(len(files)))
    missing_links, missing_paths, outside = [], [], []
    for rel in files:
        path = os.path.join(ROOT, rel)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        here = os.path.dirname(path)
        lines = text.split("\n")
        for n, line in enumerate(lines, 1):
            if OUTSIDE.search(line) and rel != "tests/docs/links_test.py":
                outside.append(f"{rel}:{n}: {line.strip()[:100]}")
            if rel.endswith(".md"):
                for target in MD_LINK.findall(INLINE_CODE.sub("", line)):
                    if re.match(r"[a-z]+:|#|mailto:", target):
                        continue
                    t = target.split("#")[0].split("?")[0]
                    if t and not os.path.exists(os.path.normpath(os.path.join(here, t))):
                        missing_links.append(f"{rel}:{n}: ({target})")
            for p in REPO_PATH.findall(line):
                if not p.startswith(FOREIGN) and not os.path.exists(os.path.join(ROOT, p)):
                    missing_paths.append(f"{rel}:{n}: {p}")
            if rel.startswith("docs/") and rel.endswith(".md"):
                for p in SIBLING_MD.findall(line):
                    if p.lower() == "readme.md" or p in ("changelog.md",):
                        continue
                    if not os.path.exists(os.path.join(here, p)):
                        missing_paths.append(f"{rel}:{n}: {p} (a sibling document)")
    check("every relative Markdown link resolves", not missing_links, "; ".join(missing_links[:20]))
    check("every quoted repository path exists", not missing_paths, "; ".join(missing_paths[:30]))
    check("nothing points outside the repository (DESIGN.md, shared/notes/)", not outside,
          "; ".join(outside[:20]))
    return summary()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Names every phrase that narrates how the work was done instead of describing the product: an
issue number ("issue 12", "issue #12"), a round of work ("round 3"), a work session ("this
session", "the previous session", "session 4", "in a session") and the source articles called
seeds ("seed article", "the seeds", "seeds/"). The product's own words pass: the guard's session
(src/guard/session.*, "the guard session", GuardSession), an RNG seed (--seed, manual_seed, seed=),
a fuzzer's seeds (on a line that names fuzzing, a corpus or mutations), a benchmark's rounds ("3
interleaved rounds").

Looks at the text of every file under ROOT's src/, tests/ (but tests/data, recorded data, and this
tool's test) and docs/ (but docs/results/raw), and at the name of every file of ROOT (git's tracked files when ROOT
is a git work tree, else every file under it).

    tools/process_words.py [ROOT]      # ROOT: the repository (default: the one holding this tool)

Exit codes: 0 none found; 1 some (one line each on stdout, "path:line: "phrase" (kind)", line 0
for a file name); 2 bad arguments or a ROOT that is not a folder.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Iterator, List, Tuple

# (kind, pattern); case-insensitive. Each pattern matches the narrating phrase only.
PATTERNS = [
    ("issue", r"\bissues?\s*#?\s*\d+\b"),
    ("round", r"\brounds?\s+\d+\b"),
    ("round", r"\b(?:this|previous|prior|earlier|past)\s+round\b"),
    ("session", r"\b(?:this|previous|prior|last|earlier|later|past|next)\s+sessions?\b"),
    ("session", r"\bsessions?\s+#?\d+\b"),
    ("session", r"\b(?:in|during|within)\s+(?:a|one|the\s+same)\s+(?:work(?:ing)?\s+)?session\b"),
    ("session", r"\b(?:across|over\s+several|over\s+many)\s+sessions\b"),
    ("seed", r"\bseed\s+(?:articles?|texts?|posts?|papers?|sources?|material|blogs?)\b"),
    ("seed", r"\bthe\s+seeds\b(?!\s+(?:corpus|corpora)\b)"),
    ("seed", r"\bseeds/"),
    ("seed", r"\bthe\s+seed(?:'s)?(?=\s*[:;,.)]|'s|\s+(?:says?|said|shows?|showed|asks?|asked|names?|named|"
             r"reads?|calls?|called|suggests?|recommends?|article|describes?|decision))"),
]
COMPILED = [(kind, re.compile(p, re.IGNORECASE)) for kind, p in PATTERNS]
# A fuzzer's seeds are the product's: on a line about fuzzing, "seed" narrates nothing.
FUZZ_CONTEXT = re.compile(r"fuzz|corpus|corpora|mutat", re.IGNORECASE)

TEXT_FOLDERS = ("src", "tests", "docs")
# Recorded data, raw results, and this tool's own test (its examples are the phrases it names).
SKIPPED = ("tests/data/", "docs/results/raw/", "tests/tools/process_words_test.py")
SKIPPED_DIRS = {".git", "__pycache__", "node_modules"}


def hits(text: str) -> List[Tuple[str, str]]:
    """The (phrase, kind) pairs in one line of text, in order."""
    found = []
    fuzz = FUZZ_CONTEXT.search(text) is not None
    for kind, rx in COMPILED:
        if kind == "seed" and fuzz:
            continue
        for m in rx.finditer(text):
            found.append((m.start(), m.group(0), kind))
    return [(phrase, kind) for _, phrase, kind in sorted(found)]


def name_hits(path: str) -> List[Tuple[str, str]]:
    """The phrases in a file's path: separators read as spaces, a number glued to a word split off
    (issue_12.md, round3/, seeds/ all count)."""
    text = re.sub(r"(?<=[A-Za-z])(?=\d)", " ", path)
    text = re.sub(r"[_\-.]+", " ", text)
    return hits(text)


def files(root: str) -> List[str]:
    """Paths relative to root: git's tracked and untracked-but-not-ignored files, else a walk."""
    if os.path.isdir(os.path.join(root, ".git")) or os.path.isfile(os.path.join(root, ".git")):
        r = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, check=False)
        if r.returncode == 0:
            paths = sorted({p for p in r.stdout.decode("utf-8", "replace").split("\0") if p})
            return [p for p in paths if os.path.isfile(os.path.join(root, p))]
    out = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for n in sorted(names):
            out.append(os.path.relpath(os.path.join(folder, n), root).replace(os.sep, "/"))
    return out


def text_lines(path: str) -> Iterator[Tuple[int, str]]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return
    if b"\0" in data[:8192]:
        return  # binary
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        yield number, line


def check(root: str) -> List[str]:
    problems = []
    for rel in files(root):
        for phrase, kind in name_hits(rel):
            problems.append(f'{rel}:0: "{phrase}" ({kind}, in the file name)')
        if not rel.startswith(tuple(f + "/" for f in TEXT_FOLDERS)) or rel.startswith(SKIPPED):
            continue
        for number, line in text_lines(os.path.join(root, rel)):
            for phrase, kind in hits(line):
                problems.append(f'{rel}:{number}: "{phrase}" ({kind})')
    return problems


def main(argv: List[str]) -> int:
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    if not os.path.isdir(root):
        print(f"process_words: {root}: not a folder", file=sys.stderr)
        return 2
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} phrase(s) about how the work was done, not about the product: say what the code "
              "does and why, and point to docs/results for measurements", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""List every C++/CUDA function in a source tree whose body is longer than a limit.

    tools/function_length.py src/              # exit 1 and list them when any is over 120 lines
    tools/function_length.py src/ --max 80

A function's length is counted as clang-tidy's readability-function-size counts it (LineThreshold):
the line of its closing brace minus the line of its opening brace. Blank lines and comments count.
Files: *.cpp *.cc *.hpp *.h *.cu *.cuh under SRC_DIR (recursively, sorted).

The scanner is a brace matcher, not a compiler: comments, string and character literals (raw
strings too) and preprocessor lines are blanked first; then, at namespace and class scope, a `{`
opens a function body when the text before it is a declarator with a parameter list, optionally
followed by qualifiers, a trailing return type or a constructor's initializer list. Functions
defined inside a function (lambdas, local classes) count as part of it. Clang-tidy needs a
compilation database and takes ~10 s a file; this takes well under a second for src/ and reads .cu
files too.

Exit codes: 0 none over the limit, 1 some (listed on stdout, one per line,
"path:line: name is N lines (max M)"), 2 bad arguments or an unreadable folder.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from typing import List, Optional, Tuple

EXTENSIONS = (".cpp", ".cc", ".hpp", ".h", ".cu", ".cuh")


@dataclass
class Function:
    path: str
    name: str
    open_line: int
    close_line: int

    @property
    def lines(self) -> int:
        return self.close_line - self.open_line


def _blank(chars: List[str], start: int, end: int) -> None:
    for i in range(start, end):
        if chars[i] != "\n":
            chars[i] = " "


def _starts_number(text: str, quote: int) -> bool:
    """True when the ' at `quote` is a digit separator (1'000'000), not a character literal."""
    i = quote
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_'."):
        i -= 1
    return i < quote and text[i].isdigit()


def sanitize(text: str) -> str:
    """The text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    chars = list(text)
    n = len(text)
    i = 0
    line_start = True  # only whitespace since the last newline
    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if line_start and c == "#":  # a directive, with its backslash continuations
            j = i
            while j < n:
                if text[j] == "\n" and text[j - 1] != "\\":
                    break
                if text.startswith("/*", j):  # a block comment inside a directive ends it only where it ends
                    k = text.find("*/", j + 2)
                    j = n if k < 0 else k + 2
                    continue
                j += 1
            _blank(chars, i, j)
            i = j
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            _blank(chars, i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            _blank(chars, i, j)
            i = j
        elif c == '"':
            raw = re.search(r'(?:\b|^)(?:u8|u|U|L)?R$', text[max(0, i - 3):i])
            if raw and (i - len(raw.group(0)) == 0 or not (text[i - len(raw.group(0)) - 1].isalnum() or
                                                            text[i - len(raw.group(0)) - 1] == "_")):
                m = re.match(r'"([^ ()\\\t\n]{0,16})\(', text[i:])
                if m:
                    close = ")" + m.group(1) + '"'
                    j = text.find(close, i + len(m.group(0)))
                    j = n if j < 0 else j + len(close)
                    _blank(chars, i, j)
                    i = j
                    continue
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(n, j + 1)
            _blank(chars, i, j)
            i = j
        elif c == "'" and not _starts_number(text, i):
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(n, j + 1)
            _blank(chars, i, j)
            i = j
        else:
            i += 1
    return "".join(chars)


def _match(text: str, open_pos: int) -> int:
    """The index of the bracket closing the one at open_pos (len(text) when unbalanced)."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    opener = text[open_pos]
    closer = pairs[opener]
    depth = 0
    for i in range(open_pos, len(text)):
        if text[i] == opener:
            depth += 1
        elif text[i] == closer:
            depth -= 1
            if depth == 0:
                return i
    return len(text)


_OPERATOR = re.compile(r"\boperator\s*(?:\(\s*\)|\[\s*\]|<=>|->\*?|[-+*/%^&|~!=<>]+|new\b|delete\b|\"\"\s*\w+|[\w:<> ]+?(?=\())")
_QUALIFIERS = r"(?:\s*(?:const|volatile|noexcept\s*(?:\([^()]*(?:\([^()]*\)[^()]*)*\))?|override|final|mutable|constexpr|&&|&|throw\s*\(\s*\)|__attribute__\s*\(\(.*?\)\)))*"
_AFTER_PARAMETERS = re.compile(_QUALIFIERS + r"\s*(?:->.*|:(?!:).*|requires\b.*)?$", re.S)


def _top_level_groups(header: str) -> List[Tuple[int, int]]:
    groups = []
    i = 0
    while i < len(header):
        if header[i] == "(":
            j = _match(header, i)
            groups.append((i, j))
            i = j + 1
        elif header[i] == "[" and header.startswith("[[", i):
            i = _match(header, i) + 1
        else:
            i += 1
    return groups


def _strip_template_prefix(h: str) -> str:
    while True:
        m = re.match(r"template\s*<", h)
        if not m:
            return h
        depth = 0
        for i in range(m.end() - 1, len(h)):
            if h[i] == "<":
                depth += 1
            elif h[i] == ">":
                depth -= 1
                if depth == 0:
                    h = h[i + 1:].lstrip()
                    break
        else:
            return h


def _normalize(header: str) -> str:
    h = " ".join(header.split())
    h = re.sub(r"^(?:(?:public|private|protected)\s*:\s*)+", "", h)
    h = re.sub(r"\[\[.*?\]\]\s*", "", h)
    return _strip_template_prefix(h.strip())


def classify(header: str) -> Tuple[str, Optional[str], bool]:
    """('function', name, has_initializer_list) | ('scope', None, False) | ('other', None, False)."""
    h = _normalize(header)
    if re.match(r"(?:inline\s+)?namespace\b", h) or re.fullmatch(r"extern\s*", h):
        return "scope", None, False
    masked = _OPERATOR.sub(lambda m: "operator_" + "_" * (len(m.group(0)) - 9), h)
    first_paren = masked.find("(")
    if first_paren >= 0 and re.search(r"(?<![=!<>])=(?![=])", masked[:first_paren]):
        return "other", None, False  # a variable's initializer (a lambda too)
    for start, end in _top_level_groups(masked):
        tail = masked[end + 1:]
        m = _AFTER_PARAMETERS.match(tail)
        if m and re.search(r"[\w>)\]]\s*$", masked[:start]):
            init_list = bool(re.match(_QUALIFIERS + r"\s*:(?!:)", tail))
            before = h[:start].rstrip()
            name = re.search(r"(operator\S*|[~\w:<>,]+)$", before)
            label = name.group(1) if name else before
            if len(label) > 1 and label.isupper():  # TEST(Suite, Name), TEST_F(...)
                label += h[start:end + 1]
            return "function", label, init_list
    if re.match(r"(?:class|struct|union)\b", h):
        return "scope", None, False
    return "other", None, False


def find_functions(path: str, text: str) -> List[Function]:
    clean = sanitize(text)
    line_of = []
    line = 1
    for ch in clean:
        line_of.append(line)
        if ch == "\n":
            line += 1
    line_of.append(line)
    found: List[Function] = []

    def scan(pos: int, end: int) -> None:
        header_start = pos
        i = pos
        while i < end:
            c = clean[i]
            if c == ";":
                header_start = i + 1
            elif c == "}":
                header_start = i + 1
            elif c == "{":
                kind, name, init_list = classify(clean[header_start:i])
                close = _match(clean, i)
                before = clean[header_start:i].rstrip()
                if kind == "function" and init_list and before and (before[-1].isalnum() or before[-1] in "_>"):
                    i = close + 1  # a member's braced initializer, `x_{1}`: the body comes later
                    continue
                if kind == "function":
                    found.append(Function(path, name or "?", line_of[i], line_of[min(close, len(clean) - 1)]))
                elif kind == "scope":
                    scan(i + 1, close)
                i = close + 1
                header_start = i
                continue
            i += 1

    scan(0, len(clean))
    return found


def source_files(root: str) -> List[str]:
    out = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(EXTENSIONS):
                out.append(os.path.join(folder, f))
    return out


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description="List C++/CUDA functions longer than --max lines.")
    parser.add_argument("src_dir", help="folder to scan recursively")
    parser.add_argument("--max", type=int, default=120, help="most lines a function may have (default 120)")
    args = parser.parse_args(argv)
    if args.max < 1:
        print(f"function_length: --max must be >= 1, not {args.max}", file=sys.stderr)
        return 2
    if not os.path.isdir(args.src_dir):
        print(f"function_length: {args.src_dir}: not a folder", file=sys.stderr)
        return 2
    long_ones: List[Function] = []
    for path in source_files(args.src_dir):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            print(f"function_length: cannot read {path}: {e.strerror}", file=sys.stderr)
            return 2
        long_ones += [fn for fn in find_functions(path, text) if fn.lines > args.max]
    for fn in long_ones:
        print(f"{fn.path}:{fn.open_line}: {fn.name} is {fn.lines} lines (max {args.max})")
    if long_ones:
        print(f"{len(long_ones)} function(s) over {args.max} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

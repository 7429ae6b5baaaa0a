#!/usr/bin/env python3
"""Whether every kernel of one build's PTX is still in another's, instruction
for instruction: the check behind "the fp16 path's PTX is unchanged" when a
step's kernels become templates on more forms (kernels/README.md).

    scripts/ptx_same_code.py BEFORE_DIR AFTER_DIR

Each directory holds one .ptx per step file, named alike, from

    nvcc -I kernels/include -I kernels/src -O2 -DNDEBUG --expt-relaxed-constexpr \\
         -std=c++17 -gencode=arch=compute_90a,code=sm_90a -x cu -ptx STEP.cu -o DIR/STEP.ptx

(compute_100a,code=sm_100a for kernels/src/sm100). For each entry (kernel)
of a BEFORE file it looks for an entry of the AFTER file with the same
instructions once names are set aside: mangled names (a template's changed),
the parameter list (a kernel may gain one its old instantiation ignores),
labels, register numbers and declarations. Prints one line per file and
exits 1 if any BEFORE kernel has no match. Standard library only."""
import os
import re
import sys


def entries(path):
    """{name: body} of each .entry and .func in a PTX file."""
    text = open(path).read()
    parts = re.split(r"\n(?=(?:\.visible |\.weak |\.extern )?\.(?:entry|func) )", text)
    out = {}
    for part in parts[1:]:
        m = re.match(r"(?:\.visible |\.weak |\.extern )?\.(?:entry|func)\s+(?:\([^)]*\)\s*)?(\S+)", part)
        out[m.group(1).split("(")[0]] = part
    return out


def canonical(body):
    body = re.sub(r"_Z[A-Za-z0-9_$]+", "SYM", body)
    body = re.sub(r"\(\s*\.param[^)]*\)", "(PARAMS)", body, count=1, flags=re.S)
    body = re.sub(r"(\$L__BB|__local_depot|\$L__tmp)\d+(_\d+)?", r"\1N", body)
    lines = [l for l in body.split("\n")
             if l.strip() and not l.strip().startswith(("// .globl", ".reg "))]
    numbering = {}

    def renumber(m):
        seen = numbering.setdefault(m.group(1), {})
        return seen.setdefault(m.group(0), f"%{m.group(1)}#{len(seen)}")

    return re.sub(r"%(rd|rs|r|fd|f|p)(\d+)\b", renumber, "\n".join(lines))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before_dir, after_dir = sys.argv[1:]
    missing_total = 0
    for name in sorted(os.listdir(before_dir)):
        if not name.endswith(".ptx"):
            continue
        before = entries(os.path.join(before_dir, name))
        after = {canonical(b) for b in entries(os.path.join(after_dir, name)).values()}
        missing = [k for k, b in before.items() if canonical(b) not in after]
        missing_total += len(missing)
        print(f"{name}: {len(before) - len(missing)} of {len(before)} kernels found unchanged"
              + (f"; changed: {', '.join(m[-60:] for m in missing)}" if missing else ""))
    sys.exit(1 if missing_total else 0)


if __name__ == "__main__":
    main()

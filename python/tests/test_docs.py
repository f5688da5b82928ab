"""The Python examples of the documentation run (the convention is docs/README.md's "Examples are tested").

Every ```python block of README.md and docs/*.md runs as a script, and every block marked
<!-- doc-test: python --> as a bash script with this environment's python first on PATH, each in a scratch
directory holding links to the repository's examples/ and data/; a block marked <!-- doc-test: skip (REASON) -->
does not. crates/cli/tests/docs.rs runs the command blocks that need no Python package.
"""

import os
import re
import subprocess
import sys

import pandas as pd
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCUMENTS = ["README.md"] + sorted(
    os.path.join("docs", name) for name in os.listdir(os.path.join(ROOT, "docs")) if name.endswith(".md")
)
MARKER = re.compile(r"^\s*<!-- doc-test: (.*) -->\s*$")


def blocks():
    """(place, kind, body) of each block the Python tests run: kind is "python" or "sh"."""
    found = []
    for name in DOCUMENTS:
        lines = open(os.path.join(ROOT, name), encoding="utf-8").read().splitlines()
        marker, i = None, 0
        while i < len(lines):
            line = lines[i]
            m = MARKER.match(line)
            if m:
                marker = m.group(1)
            elif line.lstrip().startswith("```"):
                info = line.strip()[3:].strip()
                start = i + 1
                i += 1
                while lines[i].strip() != "```":
                    i += 1
                body = "\n".join(lines[start:i]) + "\n"
                skipped = marker is not None and marker.startswith("skip (")
                if info == "python" and not skipped:
                    found.append((f"{name}:{start}", "python", body))
                elif marker == "python":
                    found.append((f"{name}:{start}", "sh", body))
                marker = None
            elif line.strip():
                marker = None
            i += 1
    return found


def scratch(tmp_path):
    for shipped in ("examples", "data"):
        os.symlink(os.path.join(ROOT, shipped), tmp_path / shipped)
    return tmp_path


def test_the_documents_have_python_examples():
    kinds = [kind for _, kind, _ in blocks()]
    assert kinds.count("python") >= 3 and kinds.count("sh") >= 1, kinds


@pytest.mark.parametrize("place,kind,body", blocks(), ids=[place for place, _, _ in blocks()])
def test_a_python_example_of_the_documents_runs(place, kind, body, tmp_path):
    directory = scratch(tmp_path)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if kind == "python":
        (directory / "example.py").write_text(body)
        command = [sys.executable, "example.py"]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", body]
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{place}: exited with {done.returncode}\n{body}\n{done.stdout}\n{done.stderr}"


def test_the_design_space_figure_shows_what_the_script_draws(tmp_path):
    """docs/figures/design-space.png is drawn from docs/figures/design-space.csv: the study run now must give it."""
    out = tmp_path / "design-space"
    subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "design_space.py"), "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    now = pd.read_csv(out / "designs.csv")
    shipped = pd.read_csv(os.path.join(ROOT, "docs", "figures", "design-space.csv"))
    # Means over runs: equal up to the last bits a different pandas may sum in another order.
    pd.testing.assert_frame_equal(now, shipped, check_exact=False, rtol=1e-9)

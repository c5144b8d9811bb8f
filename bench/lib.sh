# Installers shared by the benches, so that the same logic exists once: Debian packages with
# one `apt-get update` retry, wrk, and perf_analyzer 2.50 from the tritonclient wheel in
# target/bench-venv. Sourced (not run) by bench/*/run.sh from the repository root; installs
# only what is missing, quietly, logging to target/bench-install.log, and says in one
# sentence what failed.

BENCH_LOG=${BENCH_LOG:-target/bench-install.log}
mkdir -p "$(dirname "$BENCH_LOG")"

# apt_install PKG: installs a Debian package unless it is installed already.
apt_install() {
  dpkg -s "$1" >/dev/null 2>&1 && return 0
  echo "== installing $1 (apt-get; log in $BENCH_LOG)" >&2
  {
    apt-get install -y "$1" || { apt-get update && apt-get install -y "$1"; }
  } >>"$BENCH_LOG" 2>&1 && return 0
  echo "could not install $1 with apt-get (see $BENCH_LOG)" >&2
  return 1
}

# need_wrk: makes sure wrk is on PATH.
need_wrk() {
  command -v wrk >/dev/null 2>&1 || apt_install wrk
}

# install_perf_analyzer: perf_analyzer 2.50 into target/bench-venv, and the libb64 it links.
install_perf_analyzer() {
  local venv=target/bench-venv
  if [ ! -x "$venv/bin/perf_analyzer" ] || [ ! -d "$venv/lib" ]; then
    echo "== installing perf_analyzer 2.50 into $venv (tritonclient[all]==2.50.0; log in $BENCH_LOG)" >&2
    if ! {
      python3 -m venv "$venv" &&
        "$venv/bin/pip" install -q 'tritonclient[all]==2.50.0' nvidia-cuda-runtime-cu12
    } >>"$BENCH_LOG" 2>&1; then
      echo "could not install perf_analyzer 2.50 into $venv with pip (see $BENCH_LOG)" >&2
      return 1
    fi
  fi
  apt_install libb64-0d
}

# setup_perf_analyzer: sets PA to perf_analyzer ($PERF_ANALYZER, else the one installed into
# target/bench-venv) and puts the directory of its libcudart ($PERF_ANALYZER_LIB, else the
# venv's site-packages/nvidia/cuda_runtime/lib) on LD_LIBRARY_PATH.
setup_perf_analyzer() {
  PA=${PERF_ANALYZER:-}
  if [ -z "$PA" ]; then
    install_perf_analyzer || return 1
    PA=$PWD/target/bench-venv/bin/perf_analyzer
  fi
  local lib=${PERF_ANALYZER_LIB:-}
  [ -n "$lib" ] || lib=$(ls -d "$(dirname "$PA")"/../lib/python3*/site-packages/nvidia/cuda_runtime/lib 2>/dev/null | head -n 1 || true)
  [ -z "$lib" ] || export LD_LIBRARY_PATH="${lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

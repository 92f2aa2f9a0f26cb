#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks for building and testing
# tinylm. Idempotent and non-interactive: it installs only what is missing,
# so on a prepared machine it does nothing and prints one line.
set -euo pipefail
cd "$(dirname "$0")/.."
# One setup at a time: parallel makes (make -j, several checkouts of one
# tree) would otherwise run apt-get or `npm ci` twice at once, and one
# `npm ci` deletes node_modules under the other.
exec 9<"scripts/setup.sh"
flock 9

# Debian packages: compilers and wasm linker, the sanitizer/libFuzzer
# runtime, wabt (wasm opcode check), the differential oracles (b3sum,
# python3-cbor2, python3-jinja2), jansson (JSON in the native tools), libcurl
# (tinylm pull), libsodium (Ed25519 for tinylm promote --sign and
# promote show --trust), openssl (a certificate for the pull test's https hub),
# libmicrohttpd (the HTTP server under tinylm serve), strace (the convert test
# counts input opens) and unicode-data (UCD files for the generated Unicode
# tables), GNU time (peak RSS in make bench),
# NumPy (the forward-pass oracle, tools/oracle/qwen3_ref.py) on the reference
# BLAS libblas3 (tools/oracle/reference_blas.py), SciPy (the independent
# check of promote's statistics, tests/promote/stats_scipy.py), libedit (line
# editing in tinylm chat), pkgconf (pkg-config: the install stage links
# examples/ against the installed library), the aarch64 cross compiler and qemu-user (the
# NEON kernels' stages: make neon, tests/neon/qemu.sh), and chromium (the
# browser that tests/web/chromium_test.mjs drives headless through npm's
# playwright-core, which downloads no browser of its own), and Mesa's
# Vulkan drivers with the Vulkan loader (mesa-vulkan-drivers, libvulkan1:
# llvmpipe, the second WebGPU adapter tests/web/webgpu_test.mjs runs the
# webgpu lane on, docs/web.md), and haproxy and prometheus (the serve-fleet
# stage puts three servers behind the one and has the other scrape them,
# docs/deploy.md). npm's pinned
# openai 6.x client (package-lock.json) drives tests/serve.
packages=(gcc make clang lld libclang-rt-14-dev wabt nodejs b3sum
          python3 python3-cbor2 python3-jinja2 python3-numpy python3-scipy libblas3 libjansson-dev
          libcurl4-openssl-dev libmicrohttpd-dev libsodium-dev openssl strace
          libedit-dev unicode-data time pkgconf
          gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static chromium
          mesa-vulkan-drivers libvulkan1 haproxy prometheus)
# `scripts/setup.sh --demo-train` (make demo-train only, never make test: CI
# must not download torch) adds Debian's CPU torch for the demo model's
# trainer, and OpenBLAS, without which its matrix products run on the
# reference BLAS, 10-20x slower.
if [[ ${1:-} == --demo-train ]]; then packages+=(python3-torch libopenblas0-pthread); fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
# node may come from elsewhere than Debian's nodejs package (it does on the
# project's machines); any node >= 18 will do.
if command -v node >/dev/null 2>&1; then
  filtered=()
  for p in "${missing[@]}"; do [[ "$p" == nodejs ]] || filtered+=("$p"); done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages (pinned in package-lock.json), once the project has any.
if [[ -f package-lock.json ]]; then
  if [[ ! -d node_modules ]] || [[ package-lock.json -nt node_modules/.package-lock.json ]]; then
    echo "setup: npm ci"
    npm ci --no-audit --no-fund --loglevel=error
  fi
fi
echo "setup: ok"

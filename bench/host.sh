# Sourced by bench/llama.sh and bench/serve.sh: the header that makes a
# table from one run comparable with another's (docs/fast-profile.md keeps
# one table per ISA and host): the date, the CPU, its flags that tinylm's
# and llama.cpp's kernels depend on, and both commits. The read bandwidth
# is the caller's (tinylm bench measures it over the weights in the run).

# The flags of /proc/cpuinfo the kernels choose by (tinylm: avx2 + f16c +
# fma for its AVX2 variant, avx512f/bw/vl for AVX-512, avx512_vnni and
# avx_vnni for the integer dot products, avx512_bf16), or "none of them".
host_kernel_flags() {
  local have
  have=$(sed -n 's/^flags[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n1 |
    tr ' ' '\n' | grep -xE 'avx2|f16c|fma|avx512f|avx512bw|avx512vl|avx512_vnni|avx512_bf16|avx_vnni' |
    sort | tr "\n" " " | sed "s/ $//" || true)
  echo "${have:-none of avx2, f16c, fma, avx512f, avx512_vnni, avx_vnni}"
}

# tinylm's commit, -dirty with uncommitted changes to tracked files.
host_tinylm_commit() {
  local c
  c=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  [[ $c == unknown || -z $(git status --porcelain --untracked-files=no 2>/dev/null) ]] || c+=-dirty
  echo "$c"
}

# llama.cpp's commit from DIR/COMMIT (a snapshot), else its git.
host_llama_commit() {
  if [[ -f $1/COMMIT ]]; then
    head -n1 "$1/COMMIT"
  else
    git -C "$1" describe --always --dirty 2>/dev/null || echo unknown
  fi
}

# The ISA flags a llama.cpp build directory was configured with (its
# CMakeCache.txt), e.g. "GGML_NATIVE=OFF GGML_AVX2=ON GGML_AVX512=OFF".
host_llama_build_flags() {
  local f=$1/CMakeCache.txt
  [[ -f $f ]] || { echo "no CMakeCache.txt"; return; }
  sed -n 's/^\(GGML_NATIVE\|GGML_AVX2\|GGML_AVX512\|GGML_AVX_VNNI\|GGML_AVX512_VNNI\):BOOL=\(.*\)/\1=\2/p' "$f" |
    tr '\n' ' ' | sed 's/ $//'
}

# host_header LLAMA_DIR: the date, CPU, flags and both commits, one per line.
host_header() {
  local cpu
  cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n1)
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "CPU: ${cpu:-unknown}, $(nproc) logical CPUs; kernel flags: $(host_kernel_flags)"
  echo "tinylm: $(host_tinylm_commit); llama.cpp: $(host_llama_commit "$1") ($1)"
}

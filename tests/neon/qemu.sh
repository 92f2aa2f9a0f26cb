#!/usr/bin/env bash
# The aarch64 build (`make neon`, build/aarch64) under qemu-user: both NEON
# variants (neon, neon-dotprod) against the scalar twins and the fast lane
# at 1, 2, 3 and 7 threads, the kernel suites also under ASan + UBSan
# (unit); the transcript byte-identical to the x86-64 one, whose fast-lane
# records ran another variant, on an emulated CPU with the dot-product
# extension and on one without (identity). qemu
# emulates AArch64's IEEE arithmetic, fused multiply-add included, so a
# kernel that fuses shows here as different bits; the identity check also
# refuses any fused instruction in the core's aarch64 objects outright
# (F-2). scripts/setup.sh installs qemu-user-static and the cross compiler:
# when they are missing this fails, it never passes without running.
#   tests/neon/qemu.sh unit
#   tests/neon/qemu.sh identity X86_64_TRANSCRIPT   (e.g. build/gcc/transcript)
set -uo pipefail
cd "$(dirname "$0")/../.."
qemu=qemu-aarch64-static
objdump=aarch64-linux-gnu-objdump
for tool in "$qemu" "$objdump"; do
  command -v "$tool" >/dev/null ||
    { echo "error: $tool not found (scripts/setup.sh installs qemu-user-static and gcc-aarch64-linux-gnu)"; exit 1; }
done

case ${1:-} in
  unit)
    out=$("$qemu" build/aarch64/unit_tests)
    rc=$?
    printf '%s\n' "$out"
    # the dispatch suite skips a variant the CPU lacks; qemu's default CPU
    # has every extension the variants use, so here that is a failure
    if grep -q 'does not run kernel variant neon' <<<"$out"; then
      echo "FAILED: a NEON variant did not run under $qemu"
      exit 1
    fi
    # the kernel and fast-forward suites again under ASan + UBSan: an
    # over-read by a NEON load shows here (leak checks need ptrace, which
    # qemu-user lacks; the native ASan stage checks leaks)
    pass=0 fail=0 skip=0
    for filter in kernel fast_forward; do
      more=$(ASAN_OPTIONS=detect_leaks=0 "$qemu" -L /usr/aarch64-linux-gnu \
        build/aarch64/asan/unit_tests "$filter" 2>&1)
      ((rc |= $?))
      printf '%s\n' "$more"
      out+=$'\n'"$more"
    done
    # one count line for the stage: the sum of the three runs' lines
    while read -r p _ f _ k _; do
      pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + ${k:-0}))
    done < <(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' <<<"$out")
    echo "neon: unit tests, then the kernel and fast_forward suites under ASan + UBSan"
    echo "$pass passed, $fail failed, $skip skipped"
    exit "$rc"
    ;;
  identity)
    x86=${2:?usage: $0 identity X86_64_TRANSCRIPT}
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    pass=0 fail=0
    x86_desc=$("$x86" --describe) || exit 1
    "$x86" >"$work/x86" 2>"$work/x86.count" || { cat "$work/x86.count"; exit 1; }
    records=$(cat "$work/x86.count")
    # qemu's default CPU has the dot-product extension, a Cortex-A53 has
    # not: the transcript must pick each variant from HWCAP, and both must
    # give the x86-64 bytes.
    for cpu_variant in max:neon-dotprod cortex-a53:neon; do
      cpu=${cpu_variant%%:*} want=${cpu_variant#*:}
      arm_desc=$("$qemu" -cpu "$cpu" build/aarch64/transcript --describe) || exit 1
      if [[ $arm_desc != "kernels $want,"* ]]; then
        echo "FAILED: on a $cpu the aarch64 transcript runs '$arm_desc', not $want"
        fail=$((fail + 1))
        continue
      fi
      "$qemu" -cpu "$cpu" build/aarch64/transcript >"$work/arm" 2>"$work/arm.count" ||
        { cat "$work/arm.count"; exit 1; }
      if cmp "$work/x86" "$work/arm" && [[ $records == $(cat "$work/arm.count") ]]; then
        echo "neon: transcript of $records results ($(stat -c %s "$work/x86") bytes) identical," \
          "aarch64 ($arm_desc; $qemu -cpu $cpu) vs x86-64 ($x86_desc)"
        pass=$((pass + 1))
      else
        echo "FAILED: transcripts differ (x86-64 $(stat -c %s "$work/x86") bytes," \
          "aarch64 on a $cpu $(stat -c %s "$work/arm") bytes)"
        fail=$((fail + 1))
      fi
    done
    fused=$(find build/aarch64/obj/src -name '*.o' -exec "$objdump" -d {} + |
      grep -cE $'\tf(n?madd|n?msub|mla|mls)\t')
    if ((fused == 0)); then
      echo "neon: no fused multiply-add in the core's aarch64 objects"
      pass=$((pass + 1))
    else
      echo "FAILED: $fused fused multiply-add instructions in build/aarch64/obj/src (F-2)"
      fail=$((fail + 1))
    fi
    echo "$pass passed, $fail failed"
    ((fail == 0))
    ;;
  *)
    echo "usage: $0 unit | identity X86_64_TRANSCRIPT" >&2
    exit 2
    ;;
esac

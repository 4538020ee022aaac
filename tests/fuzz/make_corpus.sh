#!/bin/sh
# Regenerate the generated part of the seed corpus of fuzz_decode (tests/fuzz/corpus/decode):
# every packet of tests/vectors/*.pcap, v1/IPv6/VLAN re-encodings and bare transport packets per
# opcode, the CNP vector, small pcap/pcapng files. Files found by the fuzzer (found-*) are kept.
#
# usage: tests/fuzz/make_corpus.sh [BUILD_DIR]   (default build/h-fuzz-dbg; configured if needed)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/h-fuzz-dbg}
out=$root/tests/fuzz/corpus/decode

[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug
cmake --build "$build" --target fuzz_make_corpus
mkdir -p "$out"
rm -f "$out"/golden-* "$out"/op-* "$out"/tpkt-* "$out"/vector-* "$out"/pcap-* "$out"/odd-*
"$build/tests/fuzz/fuzz_make_corpus" "$root/tests/vectors" "$out"
du -sh "$out"

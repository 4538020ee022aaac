#!/bin/sh
# Regenerate the generated part of the seed corpora:
#  - fuzz_decode (tests/fuzz/corpus/decode, make_corpus.c): every packet of tests/vectors/*.pcap,
#    v1/IPv6/VLAN re-encodings and bare transport packets per opcode, the CNP vector, small
#    pcap/pcapng files;
#  - fuzz_cm (tests/fuzz/corpus/cm, make_corpus_cm.c): step sequences, the CM exchanges of the
#    captures replayed from either side and the engine connected to itself.
# Files found by the fuzzer (found-*) are kept.
#
# usage: tests/fuzz/make_corpus.sh [BUILD_DIR]   (default build/h-fuzz-dbg; configured if needed)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/h-fuzz-dbg}
out=$root/tests/fuzz/corpus/decode
out_cm=$root/tests/fuzz/corpus/cm

[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug
cmake --build "$build" --target fuzz_make_corpus fuzz_make_corpus_cm
mkdir -p "$out" "$out_cm"
rm -f "$out"/golden-* "$out"/op-* "$out"/tpkt-* "$out"/vector-* "$out"/pcap-* "$out"/odd-*
"$build/tests/fuzz/fuzz_make_corpus" "$root/tests/vectors" "$out"
rm -f "$out_cm"/cap-* "$out_cm"/self-*
"$build/tests/fuzz/fuzz_make_corpus_cm" "$root/tests/vectors" "$out_cm"
du -sh "$out" "$out_cm"

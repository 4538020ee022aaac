# How a test script ends early (sourced, not run): skip (exit 77, which ctest reports as skipped
# through SKIP_RETURN_CODE) or fail (exit 1), each with its reason.
skip() {
	echo "SKIP: $*"
	exit 77
}
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

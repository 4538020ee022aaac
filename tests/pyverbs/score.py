#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""
Run rdma-core's pyverbs test suite (unmodified, from SUITE) and score it.

    score.py SUITE PASS_LIST RESULTS -- SUITE_ARGS...     (e.g. -- --dev pv0)

The suite is loaded as its own run_tests.py loads it (args_parser, then the tests package);
each test's outcome (pass, fail, error, skip, xfail, xpass) goes into RESULTS, one "ID OUTCOME"
line per test, and the score (passed/failed/errors/skipped of total) is printed last.

Exit status 1 when a test failed or errored, or when a test of PASS_LIST (one test id per
line, '#' comments) did not pass or was not run; else 0.
"""
import importlib.machinery
import os
import sys
import unittest


class Recorder(unittest.TextTestResult):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcome = {}

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcome[test.id()] = 'pass'

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcome[test.id()] = 'fail'

    def addError(self, test, err):
        super().addError(test, err)
        # setUpClass errors are reported on a placeholder, not a test
        self.outcome[getattr(test, 'id', lambda: str(test))()] = 'error'

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcome[test.id()] = 'skip'

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.outcome[test.id()] = 'xfail'

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.outcome[test.id()] = 'xpass'


def main():
    if len(sys.argv) < 5 or sys.argv[4] != '--':
        print('usage: score.py SUITE PASS_LIST RESULTS -- SUITE_ARGS...', file=sys.stderr)
        return 2
    suite_dir, pass_list, results = sys.argv[1:4]
    sys.argv = [os.path.join(suite_dir, 'run_tests.py')] + sys.argv[5:]
    sys.path.insert(0, suite_dir)
    from args_parser import parser
    tests = importlib.machinery.SourceFileLoader(
        'tests', os.path.join(suite_dir, '__init__.py')).load_module()
    parser.parse_args()
    suite = unittest.defaultTestLoader.loadTestsFromModule(tests)
    runner = unittest.TextTestRunner(resultclass=Recorder, verbosity=2, stream=sys.stdout)
    res = runner.run(suite)
    outcome = res.outcome
    with open(results, 'w') as f:
        for tid in sorted(outcome):
            f.write(f'{tid} {outcome[tid]}\n')
    count = {k: sum(1 for v in outcome.values() if v == k)
             for k in ('pass', 'fail', 'error', 'skip')}
    bad = count['fail'] + count['error'] + sum(1 for v in outcome.values() if v == 'xpass')
    with open(pass_list) as f:
        wanted = [l.split('#')[0].strip() for l in f]
    lost = [t for t in wanted if t and outcome.get(t) != 'pass']
    for t in lost:
        print(f'pass list: {t} {outcome.get(t, "not run")}')
    print(f'pyverbs score: {count["pass"]} passed, {count["fail"]} failed, '
          f'{count["error"]} errors, {count["skip"]} skipped, of {len(outcome)}; '
          f'{len([t for t in wanted if t]) - len(lost)} of the pass list passed')
    return 1 if bad or lost else 0


if __name__ == '__main__':
    sys.exit(main())

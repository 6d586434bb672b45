#!/usr/bin/python3
"""Lists the tests ctest skipped, with their reasons, for CI's log.

usage: skipped_tests.py JUNIT.xml   (from `ctest --output-junit JUNIT.xml`)

ctest's summary names a skipped test but not why; the test said why on its
output: unit tests print "SKIP: reason (file:line)" (tests/unit/pragma_test.h),
end-to-end scripts "skip: reason" before they exit 77.
"""
import re
import sys
import xml.etree.ElementTree as ET

REASON = re.compile(r"^\s*(SKIP|skip)\s*[:-]\s*(.*)$")


def main(path):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print("skipped_tests.py: cannot read %s: %s" % (path, e), file=sys.stderr)
        return 2
    skipped = [tc for tc in root.iter("testcase") if tc.find("skipped") is not None]
    if not skipped:
        print("no test was skipped")
        return 0
    print("%d test%s skipped:" % (len(skipped), "" if len(skipped) == 1 else "s"))
    for tc in skipped:
        out = tc.findtext("system-out") or ""
        reasons = [m.group(2).strip() for m in map(REASON.match, out.splitlines()) if m]
        print("  %s" % tc.get("name"))
        for r in reasons or ["(no reason printed)"]:
            print("      %s" % r)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]) if len(sys.argv) == 2 else (print(__doc__), 2)[1])

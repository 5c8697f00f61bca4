"""One Unicode version for the compiled scanners and the ``regex`` module, checked at import.

The compiled scanners classify code points with tables generated from ``regex`` (see
``gen_unicode_tables.py``); the ``regex`` path (fallbacks, custom patterns, the differential
tests) asks ``regex`` itself. If the two implemented different Unicode versions, a code point
assigned in one and not the other (``\\p{Lu}`` at U+A7DD: Unicode 18, not 17) would split
differently depending on which path ran: a silent wrong answer. So importing cybpe compares the
Unicode version ``regex`` states in its package metadata with the tables' and raises
:class:`~cybpe.errors.UnicodeVersionError` when they differ.

The policy (docs/platforms.md, "The regex pin"): pyproject.toml asks for ``regex`` from the first
release with this Unicode version, with no upper bound, so that cybpe installs beside packages
that need a later ``regex``; this check, not the pin, keeps the answers exact. A ``regex`` with a
newer Unicode version is refused here until cybpe's tables are regenerated for it
(``gen_unicode_tables.py``), and the error names a release that fits.

Cost: reading one METADATA file, well under a millisecond once ``importlib.metadata`` is loaded.
"""

from __future__ import annotations

import importlib.metadata
import re

import regex

from cybpe._c.gen_unicode_tables import regex_unicode_version
from cybpe.errors import UnicodeVersionError

#: The Unicode version of the compiled tables (``unicode_tables.h``; a test checks the header
#: says the same). Public as ``cybpe.unicode_version``.
unicode_version = "18.0.0"


def _regex_requirement() -> str:
    """cybpe's own requirement on regex (pyproject.toml, as installed), for the error message."""
    try:
        requirements = importlib.metadata.requires("cybpe") or []
    except importlib.metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
        requirements = []
    return next((r for r in requirements if re.split(r"[\s<>=!~;\[(]", r, maxsplit=1)[0] == "regex"),
                f"a regex release with Unicode {unicode_version}")


def _newer(found: str) -> bool:
    try:
        return tuple(map(int, found.split("."))) > tuple(map(int, unicode_version.split(".")))
    except ValueError:
        return False


def check_regex_unicode(regex_version: str | None = None) -> None:
    """Raise UnicodeVersionError unless the installed ``regex`` implements ``unicode_version``."""
    found = regex_unicode_version() if regex_version is None else regex_version
    if found == unicode_version:
        return
    said = f"implements Unicode {found}" if found else "does not say which Unicode version it implements"
    requirement = _regex_requirement()
    if found and _newer(found):
        # The floor of the requirement is a release with cybpe's Unicode (and installs on every
        # Python cybpe supports); a later cybpe may support the newer Unicode.
        floor = re.search(r">=\s*([0-9][0-9.]*)", requirement)
        fix = (f"pip install 'regex=={floor.group(1)}' (Unicode {unicode_version}), or a cybpe release "
               f"with Unicode {found} tables" if floor else f"pip install '{requirement}'")
    else:
        fix = f"pip install '{requirement}'"
    raise UnicodeVersionError(
        f"cybpe's compiled scanners use Unicode {unicode_version} tables, but the installed regex "
        f"{getattr(regex, '__version__', '(unknown version)')} {said}; the two would split some text "
        f"differently. {fix}"
    )


check_regex_unicode()

"""The part of RPM's Python bindings (``python3-rpm``) that reads the package database, for the host
twin's Python: ``TransactionSet().dbMatch()`` yields one header per installed package, indexed by the
``RPMTAG_*`` constants. Ansible's ``package_facts`` uses exactly this on RHEL."""

import json

RPMTAG_NAME = 1000
RPMTAG_VERSION = 1001
RPMTAG_RELEASE = 1002
RPMTAG_EPOCH = 1003
RPMTAG_ARCH = 1022
_STATE = "/run/itbench-host/state.json"


def _headers():
    with open(_STATE) as f:
        packages = json.load(f)["packages"]
    for name, evr in sorted(packages.items()):
        version, _, rest = evr.partition("-")
        release, _, arch = rest.rpartition(".")
        yield {
            RPMTAG_NAME: name,
            RPMTAG_VERSION: version,
            RPMTAG_RELEASE: release,
            RPMTAG_EPOCH: None,
            RPMTAG_ARCH: arch,
        }


class TransactionSet:
    def dbMatch(self, tag=None, value=None):  # noqa: N802 - the binding's name
        for header in _headers():
            if tag in (None, "name", RPMTAG_NAME) and value is not None and header[RPMTAG_NAME] != value:
                continue
            yield header

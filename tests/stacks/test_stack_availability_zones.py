"""No AZ *name* ever reaches a template: not the dummy names of an offline synth (dummy1a), not
real ones (us-west-2a), which map to different AZ IDs in each account."""

from __future__ import annotations

import json
import re

from stack_testkit import as_list, strings, walk

AZ_NAME = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+[a-z]$")


def test_no_dummy_az_in_any_template(shipped) -> None:
    for name, template in shipped.templates.items():
        assert "dummy" not in json.dumps(template).lower(), name


def test_no_literal_az_name_property(shipped) -> None:
    for name, template in shipped.templates.items():
        for path, value in walk(template):
            if not isinstance(value, dict):
                continue
            for key in ("AvailabilityZone", "AvailabilityZones"):
                literal = [v for v in as_list(value.get(key, [])) if isinstance(v, str)]
                assert literal == [], (name, f"{path}.{key}", literal)


def test_no_az_name_anywhere(shipped) -> None:
    for name, template in shipped.templates.items():
        found = [(path, text) for path, text in strings(template) if AZ_NAME.match(text)]
        assert found == [], name

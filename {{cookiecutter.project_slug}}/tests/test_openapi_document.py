"""openapi.json, the reviewed copy of the service's OpenAPI document, is the app's document."""

import json
from pathlib import Path

from scaffold.openapi import DOCUMENT, build_document, first_difference

ROOT = Path(__file__).resolve().parent.parent


def test_openapi_json_is_the_document_of_the_app() -> None:
    path = ROOT / DOCUMENT
    assert path.is_file(), f"{DOCUMENT} is missing: run `make openapi` and commit it"
    difference = first_difference(json.loads(path.read_text()), build_document(ROOT))
    assert difference is None, f"{DOCUMENT} is stale, run `make openapi`: {difference}"


def test_first_difference_names_the_path_and_both_values() -> None:
    before = {"paths": {"/items": {"get": {"parameters": [{"name": "limit"}]}}}}
    after = {"paths": {"/items": {"get": {"parameters": [{"name": "size"}]}}}}
    assert first_difference(before, after) == (
        f'/paths/~1items/get/parameters/0/name: "limit" in {DOCUMENT}, "size" in the app\'s'
    )
    assert first_difference(before, {"paths": {}}) == f"/paths/~1items: only in {DOCUMENT}"
    assert first_difference(after, after) is None

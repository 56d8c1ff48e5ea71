"""The entry format's decoder, which decodes and checks each dataclass field by its annotation:
a real result comes back as the same data, and an entry signed with the user's key but edited
(a value of the wrong type, a reference to nothing or to an object of the wrong class, a field
too many or too few) is `Invalid`, never another exception and never a wrong value."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from verifier.config import Settings
from verifier.findings import Finding
from verifier.static import cache_format
from verifier.static.engine import FileResult
from verifier.static.runner import analyze_paths

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KEY = b"a key of this test's own"


@pytest.fixture(scope="module")
def result() -> FileResult:
    found = analyze_paths([str(EXAMPLES / "bad_train.py")], Settings()).files[0]
    assert found.findings and found.analysis is not None and found.analysis.heat is not None
    return found


def document_of(value) -> dict:
    return json.loads(cache_format.dumps(value, KEY, "entry").partition(b"\n")[2])


def load(document: dict):
    body = json.dumps(document).encode()
    return cache_format.loads(cache_format.signature(KEY, "entry", body) + b"\n" + body, FileResult, KEY, "entry")


def first(document: dict, kind: str) -> list:
    """The stored fields of the entry's first object of class `kind` (module:name)."""
    return next(fields for name, fields in document["objects"] if name == kind)


def position(cls: type, name: str) -> int:
    return [f.name for f in dataclasses.fields(cls)].index(name)


def index_of(document: dict, kind: str) -> int:
    return next(i for i, (name, _) in enumerate(document["objects"]) if name == kind)


FINDING, TRACE_STEP = "verifier.findings:Finding", "verifier.findings:TraceStep"
CALL_SITE = "verifier.static.heat:CallSite"


def test_a_real_result_comes_back_as_the_same_data(result):
    again = cache_format.loads(cache_format.dumps(result, KEY, "entry"), FileResult, KEY, "entry")
    assert cache_format.canonical(again) == cache_format.canonical(result)
    assert again.findings == result.findings and again.suppressed == result.suppressed
    stored = dataclasses.replace(result, analysis=None)  # what the record of a run keeps: plain data, compared by value
    assert cache_format.loads(cache_format.dumps(stored, KEY, "entry"), FileResult, KEY, "entry") == stored


def test_an_object_held_in_two_places_is_one_object_again(result):
    again = cache_format.loads(cache_format.dumps(result, KEY, "entry"), FileResult, KEY, "entry")
    for heat in (result.analysis.heat, again.analysis.heat):
        by_name = [function for functions in heat._functions.values() for function in functions]
        assert by_name and {id(f) for f in by_name} <= {id(f) for f in heat._all_functions}


def test_fields_are_stored_in_declared_order_in_their_annotations_form(result):
    document = document_of(result)
    fields = first(document, FINDING)
    finding = result.findings[0]
    assert fields[position(Finding, "line")] == finding.line
    assert fields[position(Finding, "severity")] == finding.severity.name  # an enum member: its name
    assert type(fields[position(Finding, "heat_trace")]) is list  # a tuple of objects: their indices
    assert all(type(item) is int for item in fields[position(Finding, "heat_trace")])


def edited(result, kind: str, field: str, value) -> dict:
    document = document_of(result)
    cls = type(next(o for o in _objects(result) if f"{type(o).__module__}:{type(o).__qualname__}" == kind))
    first(document, kind)[position(cls, field)] = value
    return document


def _objects(result) -> list:
    """Every object a stored result holds, as the encoder lists them."""
    encoder = cache_format._EntryEncoder()
    encoder.document(result)
    return encoder.objects


@pytest.mark.parametrize(("kind", "field", "value"), [
    (FINDING, "line", "71"),  # a string in an int field
    (FINDING, "line", True),  # a bool in an int field
    (FINDING, "line", 7.0),
    (FINDING, "code", 101),  # an int in a str field
    (FINDING, "code", None),
    (FINDING, "severity", "SEVERE"),  # no such member
    (FINDING, "severity", {"enum": "verifier.findings:Heat", "name": "STEP"}),  # a member of another enum
    (FINDING, "heat_trace", "abc"),  # not a list where a tuple is stored
    (FINDING, "heat_trace", {"ref": 0}),
    (FINDING, "heat_trace", [{"tuple": []}]),
    (FINDING, "heat_trace", [10**6]),  # a dangling reference
    (FINDING, "heat_trace", [-1]),
    (FINDING, "heat_trace", [True]),
    (FINDING, "heat_trace", [0]),  # the object there is a FileResult, not a TraceStep
    (FINDING, "autofix", 0),  # the same, behind `X | None`
    (FINDING, "cell", "1"),
    (CALL_SITE, "where", 0),
    (CALL_SITE, "where", None),
    (CALL_SITE, "where", {"ref": 10**6}),
    (CALL_SITE, "callee", ["a"]),
    (CALL_SITE, "guarded", 1),  # an int in a bool field
    (CALL_SITE, "args", {"list": []}),  # an unknown tag
    (CALL_SITE, "args", {"tuple": 1}),
    (CALL_SITE, "condition", 7.5),
    ("verifier.static.heat:FunctionInfo", "params", ["x", 1]),  # frozenset[str] holding an int
    ("verifier.static.heat:FunctionInfo", "params", [["x"]]),  # ... a list
    ("verifier.static.heat:FunctionInfo", "calls", [0]),
    ("verifier.static.engine:ModuleAnalysis", "local_facts", [["f"], []]),  # keys and values of different lengths
    ("verifier.static.engine:ModuleAnalysis", "local_facts", [[1], [0]]),
    ("verifier.static.engine:ModuleAnalysis", "local_facts", {"dict": [["f", {"ref": 0}]]}),
    ("verifier.static.engine:FileResult", "seconds", "fast"),
    ("verifier.static.engine:FileResult", "seconds", {"float": "1e9"}),
    ("verifier.static.engine:FileResult", "findings", [{"ref": 0}]),  # the generic form: still checked
])
def test_an_edited_field_is_refused(result, kind, field, value):
    with pytest.raises(cache_format.Invalid):
        load(edited(result, kind, field, value))


@pytest.mark.parametrize("change", [
    lambda fields: fields.append(0),  # a field too many
    lambda fields: fields.pop(),  # a field too few
    lambda fields: fields.clear(),
], ids=["extra-field", "missing-field", "no-fields"])
def test_an_object_without_exactly_its_declared_fields_is_refused(result, change):
    document = document_of(result)
    change(first(document, FINDING))
    with pytest.raises(cache_format.Invalid):
        load(document)


def test_a_dataclass_stored_by_name_is_refused(result):
    document = document_of(result)
    index = index_of(document, TRACE_STEP)
    names = [f.name for f in dataclasses.fields(type(result.findings[0].heat_trace[0]))]
    document["objects"][index][1] = dict(zip(names, document["objects"][index][1]))
    with pytest.raises(cache_format.Invalid):
        load(document)


def test_a_reference_to_an_object_of_another_class_is_refused(result):
    document = document_of(result)
    finding = first(document, FINDING)
    finding[position(Finding, "heat_trace")] = [index_of(document, CALL_SITE)]
    with pytest.raises(cache_format.Invalid):
        load(document)


def test_an_equal_edit_is_still_accepted(result):
    """The generic form of a value is accepted where it fits the annotation, as every value once was."""
    document = document_of(result)
    fields = first(document, FINDING)
    fields[position(Finding, "heat_trace")] = {"tuple": [{"ref": i} for i in fields[position(Finding, "heat_trace")]]}
    severity = fields[position(Finding, "severity")]
    fields[position(Finding, "severity")] = {"enum": "verifier.findings:Severity", "name": severity}
    assert load(document).findings == result.findings


HOSTILE = [None, True, -1, 10**6, 2.5, "x", [], [0], [[]], {}, {"ref": 0}, {"tuple": 0}, {"float": "inf"}]
SMALL = """\
import torch


def step(model, batch, optimizer):
    loss = model(batch.cuda()).sum()
    loss.backward()
    optimizer.step()
    return loss


def train(model, loader, optimizer):
    for batch in loader:
        loss = step(model, batch, optimizer)
        print(loss.item())
"""


def test_any_one_field_of_any_kind_of_object_edited_is_a_value_or_invalid(tmp_path):
    """Each class's first object, each field replaced by each of a few hostile values: loading
    either gives a result or is Invalid; no other exception escapes."""
    (tmp_path / "small.py").write_text(SMALL)
    document = document_of(analyze_paths([str(tmp_path / "small.py")], Settings()).files[0])
    seen = set()
    for index, (kind, fields) in enumerate(document["objects"]):
        if kind in seen or type(fields) is not list:
            continue
        seen.add(kind)
        for place in range(len(fields)):
            for value in HOSTILE:
                copy = json.loads(json.dumps(document))
                copy["objects"][index][1][place] = value
                try:
                    assert type(load(copy)) is FileResult
                except cache_format.Invalid:
                    pass
    assert len(seen) >= 10

"""Fuzzing parse_urdf: mutated valid files raise URDFError (a ValueError) or load; nothing
else escapes and nothing hangs. Whatever loads satisfies the ModelSpec invariants and survives
a spec_to_urdf round trip."""

import re
import warnings
from datetime import timedelta

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _load import DATA, urdf_module

urdf = urdf_module()

SEEDS = [p.read_text() for p in sorted((DATA / "good_urdf").glob("*.urdf"))]
ATTRIBUTE = re.compile(r'\s[A-Za-z_:]+="[^"]*"')
VALUE = re.compile(r'="([^"]*)"')
NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
ELEMENT = re.compile(r"<(?:link|joint|inertial|origin|axis|limit|mass|inertia|parent|child|"
                     r"dynamics|mimic|robodyn)\b[^<>]*/>|<(link|joint|inertial)\b.*?</\1>",
                     re.DOTALL)
LINK_REF = re.compile(r'link="([^"]*)"')
NASTY_NUMBERS = ["nan", "-nan", "inf", "-inf", "+inf", "-1", "0", "-0", "1e308", "-1e308",
                 "1e-320", "1e999", "1e-999", "9" * 400, "", " ", "1,5", "0x1F", "1_0", "abc"]
NASTY_VALUES = NASTY_NUMBERS + ["0 0 0", "1 2", "1 2 3 4", "nan nan nan", "1e308 1e308 1e308",
                                "revolute", "continuous", "prismatic", "fixed", "floating",
                                "planar", "ball", "&amp;", "&lt;&gt;", "&#0;", "&bogus;",
                                "\u00e9\u4e2d", "'", '"']
JOINT_TYPES = ["revolute", "continuous", "prismatic", "fixed", "floating", "planar", "ball", ""]


def _pick(draw, matches):
    return matches[draw(st.integers(0, len(matches) - 1))] if matches else None


def delete_attribute(draw, text):
    m = _pick(draw, list(ATTRIBUTE.finditer(text)))
    return text if m is None else text[:m.start()] + text[m.end():]


def alter_attribute(draw, text):
    m = _pick(draw, list(VALUE.finditer(text)))
    if m is None:
        return text
    value = draw(st.one_of(st.sampled_from(NASTY_VALUES), st.text(max_size=12)))
    return text[:m.start(1)] + value + text[m.end(1):]


def swap_number(draw, text):
    m = _pick(draw, list(NUMBER.finditer(text)))
    if m is None:
        return text
    return text[:m.start()] + draw(st.sampled_from(NASTY_NUMBERS)) + text[m.end():]


def exchange_numbers(draw, text):
    numbers = list(NUMBER.finditer(text))
    a, b = _pick(draw, numbers), _pick(draw, numbers)
    if a is None or a.start() >= b.start():
        return text
    return (text[:a.start()] + b.group() + text[a.end():b.start()] + a.group()
            + text[b.end():])


def duplicate_element(draw, text):
    m = _pick(draw, list(ELEMENT.finditer(text)))
    return text if m is None else text[:m.end()] + m.group() + text[m.end():]


def delete_element(draw, text):
    m = _pick(draw, list(ELEMENT.finditer(text)))
    return text if m is None else text[:m.start()] + text[m.end():]


def relink(draw, text):
    """Point a parent/child reference at another link: two parents, cycles, several roots."""
    refs = list(LINK_REF.finditer(text))
    m, other = _pick(draw, refs), _pick(draw, refs)
    if m is None:
        return text
    return text[:m.start(1)] + other.group(1) + text[m.end(1):]


def change_joint_type(draw, text):
    matches = list(re.finditer(r'type="([^"]*)"', text))
    m = _pick(draw, matches)
    if m is None:
        return text
    return text[:m.start(1)] + draw(st.sampled_from(JOINT_TYPES)) + text[m.end(1):]


TEXT_OPS = [delete_attribute, alter_attribute, swap_number, exchange_numbers,
            duplicate_element, delete_element, relink, change_joint_type]


def insert_bytes(draw, data):
    at = draw(st.integers(0, len(data)))
    return data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]


def truncate(draw, data):
    return data[:draw(st.integers(0, len(data)))]


def delete_bytes(draw, data):
    at = draw(st.integers(0, len(data)))
    return data[:at] + data[at + draw(st.integers(1, 64)):]


BYTE_OPS = [insert_bytes, truncate, delete_bytes]


@st.composite
def mutated_urdf(draw):
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 3))):
        text = draw(st.sampled_from(TEXT_OPS))(draw, text)
    data = text.encode("utf-8", "surrogatepass")
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):  # mostly well-formed XML
        data = draw(st.sampled_from(BYTE_OPS))(draw, data)
    return data


def check_invariants(spec):
    for i, body in enumerate(spec.bodies):
        assert -1 <= body.parent < i
        assert body.joint_type in ("revolute", "prismatic") or (
            body.joint_type == "floating" and i == 0 and body.parent == -1)
        assert abs(np.linalg.norm(body.axis) - 1.0) < 1e-12
        for value in (body.origin, body.com, body.inertia, body.mass, body.armature,
                      body.damping, body.friction):
            assert np.all(np.isfinite(value))
        assert body.mass >= 0.0 and body.armature >= 0.0
        assert body.damping >= 0.0 and body.friction >= 0.0
        assert body.lower <= body.upper
    for frame in spec.frames:
        assert -1 <= frame.parent < len(spec.bodies)
        assert np.all(np.isfinite(frame.pose))


FUZZ = settings(max_examples=800, deadline=timedelta(milliseconds=500), derandomize=True,
                database=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(mutated_urdf())
def test_mutated_files_raise_only_urdf_errors(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            spec = urdf.parse_urdf(data)
        except urdf.URDFError as e:
            assert str(e).startswith("<string>: ")
            return
    check_invariants(spec)
    back = urdf.parse_urdf(urdf.spec_to_urdf(spec))
    assert sorted(b.joint_name for b in back.bodies) == sorted(b.joint_name for b in spec.bodies)
    assert [f.name for f in back.frames] == [f.name for f in spec.frames]


@FUZZ
@given(st.text(max_size=200))
def test_arbitrary_xml_text(text):
    try:
        urdf.parse_urdf("<" + text)
    except urdf.URDFError:
        pass


@settings(max_examples=100, deadline=timedelta(milliseconds=500), derandomize=True,
          database=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes(data):
    try:
        urdf.parse_urdf(data)
    except urdf.URDFError:
        pass

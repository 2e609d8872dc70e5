"""The campaign file's schema, declared once (msgspec structs): the sections and their keys
with the type of each value, the [campaign] table's keys, a sampler's table. :func:`checked`
validates a value against a declaration and turns msgspec's error into a one-line ValueError
that names the key, says what was expected (in TOML's words: table, list) and what was given,
and lists the declared alternatives (keys, parameters, choices)."""

from __future__ import annotations

import re
import typing
from typing import Annotated, Any, Dict, List, Literal, Union

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

Number = float  # msgspec accepts an int for a float (never a bool)
PerJoint = Union[float, List[float]]  # one value, or one per joint (or link)
Count = Annotated[int, Meta(ge=1)]


def _options(tp):
    """The members of a Union (UNSET dropped), or the type itself."""
    if typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) is Union:
        return [t for t in typing.get_args(tp) if t is not UnsetType]
    return [tp]


class _Table(Struct, forbid_unknown_fields=True):
    """A table whose keys are all optional: what is absent stays absent (UNSET)."""


ControllerType = Literal["computed-torque", "pd-gravity", "feedforward", "none"]


class Controller(_Table):
    type: Union[ControllerType, UnsetType] = UNSET
    kp: Union[PerJoint, UnsetType] = UNSET
    kd: Union[PerJoint, UnsetType] = UNSET
    noise_std: Union[PerJoint, UnsetType] = UNSET
    velocity_noise_std: Union[PerJoint, UnsetType] = UNSET
    delay: Union[int, UnsetType] = UNSET
    saturate: Union[bool, UnsetType] = UNSET


class Simulation(_Table):
    duration: Union[Number, UnsetType] = UNSET
    dt: Union[Number, UnsetType] = UNSET
    control_rate: Union[Number, str, UnsetType] = UNSET  # Hz, or "continuous"
    integrator: Union[str, UnsetType] = UNSET
    method: Union[str, UnsetType] = UNSET
    max_steps: Union[int, UnsetType] = UNSET


class Model(_Table):
    mass_scale: Union[PerJoint, UnsetType] = UNSET
    inertia_scale: Union[PerJoint, UnsetType] = UNSET


class Reference(_Table):
    q0: Union[PerJoint, UnsetType] = UNSET
    q1: Union[PerJoint, UnsetType] = UNSET
    T: Union[Number, UnsetType] = UNSET


class Initial(_Table):
    q_offset: Union[PerJoint, UnsetType] = UNSET
    qd: Union[PerJoint, UnsetType] = UNSET


# the sections a campaign sets (base values) or varies (grid, random), by name
SECTIONS = {"controller": Controller, "simulation": Simulation, "model": Model,
            "reference": Reference, "initial": Initial}
# the keys of the parameters that are per joint (or per link) when given as lists
VECTOR_KEYS = frozenset(f"{s}.{f.name}" for s, t in SECTIONS.items()
                        for f in msgspec.structs.fields(t) if List[float] in _options(f.type))
# the names: the controller types, each section's keys
CONTROLLERS = typing.get_args(ControllerType)
KEYS = {section: table.__struct_fields__ for section, table in SECTIONS.items()}
# a varied parameter: "section.key"
Parameter = Literal[tuple(f"{s}.{k}" for s, t in SECTIONS.items()
                          for k in t.__struct_fields__)]


class Settings(_Table):
    """The [campaign] table (or the file's top level): Campaign's keyword arguments, the
    robot and the output directory."""

    robot: Union[str, UnsetType] = UNSET
    samples: Union[Count, UnsetType] = UNSET
    seed: Union[Annotated[int, Meta(ge=0)], UnsetType] = UNSET
    batch: Union[Count, UnsetType] = UNSET
    trajectories: Union[bool, UnsetType] = UNSET
    trajectory_stride: Union[Count, UnsetType] = UNSET
    specialized: Union[bool, UnsetType] = UNSET
    name: Union[str, UnsetType] = UNSET
    output: Union[str, UnsetType] = UNSET


class CampaignFile(Settings):
    """A campaign file: the settings at the top level or in [campaign], the sections, the
    grid (``"section.key" = [values]``) and the random parameters (``"section.key" =
    {sampler}``; each checked by :class:`SamplerTable`)."""

    campaign: Union[Settings, UnsetType] = UNSET
    controller: Union[Controller, UnsetType] = UNSET
    simulation: Union[Simulation, UnsetType] = UNSET
    model: Union[Model, UnsetType] = UNSET
    reference: Union[Reference, UnsetType] = UNSET
    initial: Union[Initial, UnsetType] = UNSET
    grid: Union[Dict[Parameter, Any], UnsetType] = UNSET
    random: Union[Dict[Parameter, Any], UnsetType] = UNSET


TOP_KEYS = Settings.__struct_fields__
# a grid parameter's values
Values = Annotated[List[Any], Meta(min_length=1)]


class SamplerTable(_Table):
    """A random parameter's table: one kind with its numbers (or choices), and ``per``."""

    uniform: Union[List[Number], UnsetType] = UNSET
    normal: Union[List[Number], UnsetType] = UNSET
    loguniform: Union[List[Number], UnsetType] = UNSET
    integers: Union[List[Number], UnsetType] = UNSET
    choice: Union[List[Any], UnsetType] = UNSET
    per: Union[Literal["joint", "link"], UnsetType] = UNSET


_WORDS = {"object": "a table", "array": "a list", "str": "a string", "int": "an integer",
          "float": "a number", "bool": "a boolean"}
_ERROR = re.compile(r"^(?P<msg>.*?)(?: - at `(?P<at>[^`]*)`(?: in `(?P<in>[^`]*)`)?)?$")


def checked(value, declared, where):
    """``value`` converted to the ``declared`` type; a ValueError ``"where.key: ..."``
    otherwise."""
    try:
        return msgspec.convert(value, declared)
    except msgspec.ValidationError as exc:
        raise ValueError(_message(str(exc), value, declared, where)) from None


def _message(text, value, declared, where):
    m = _ERROR.match(text)
    msg, at = m["msg"], m["in"] or m["at"] or "$"
    is_key = m["in"] is not None
    parts = re.findall(r"\.(\w+)|\[(\d+)\]", at[1:])
    keys = [name or int(index) for name, index in parts]
    for key in keys:  # the given value and the declaration at the error's place
        value = _at(value, key)
        declared = _member(declared, key)
    name = ".".join([where] * bool(where) + [k if isinstance(k, str) else f"[{k}]"
                                             for k in keys]).replace(".[", "[") or "campaign"
    unknown = re.match(r"Object contains unknown field `(.*)`", msg)
    if unknown:
        known = ", ".join(_struct(declared).__struct_fields__)
        return f"{name}: unknown key {unknown[1]!r}; known: {known}"
    enum = re.match(r"Invalid enum value (.*)", msg)
    if enum:
        return (f"{name}: {enum[1]} is not one of "
                f"{', '.join(_literal(declared, key=is_key))}")
    expected = re.match(r"Expected `([^`]*)`(.*?)(?:, got `[^`]*`)?$", msg)
    if expected:
        kinds = " or ".join(_WORDS.get(k.strip(), k.strip()) for k in expected[1].split("|"))
        return f"{name}: expected {kinds}{expected[2]}, got {value!r}"
    return f"{name}: {msg[:1].lower()}{msg[1:]}"


def _at(value, key):
    try:
        return value[key]
    except (KeyError, IndexError, TypeError):
        return value


def _struct(tp):
    return next(t for t in _options(tp) if isinstance(t, type) and issubclass(t, Struct))


def _member(tp, key):
    """The declared type of ``tp[key]``: a struct's field, a list's item, a dict's value."""
    for t in _options(tp):
        if isinstance(t, type) and issubclass(t, Struct) and isinstance(key, str):
            return typing.get_type_hints(t, include_extras=True)[key]
        args = typing.get_args(t)
        if typing.get_origin(t) in (list, List) and isinstance(key, int):
            return args[0]
    return tp


def _literal(tp, key=False):
    """The choices of a Literal (of a dict's keys when ``key``)."""
    for t in _options(tp):
        if key and typing.get_origin(t) in (dict, Dict):
            t = typing.get_args(t)[0]
        if typing.get_origin(t) is Literal:
            return typing.get_args(t)
    return ()

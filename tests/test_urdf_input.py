"""URDF front end: the bad-input corpus, and the sources it reads (path, str, text, bytes,
UTF-16; meshes and package URIs are never fetched)."""

import socket
import time

import pytest

from _urdf import BAD, GOOD, parse, same_dynamics, urdf


# ---------------------------------------------------------------- bad input corpus

def _expected():
    table = {}
    for line in (BAD / "expected.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, fragment = line.split(": ", 1)
            table[name] = fragment
    return table


EXPECTED = _expected()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_file_raises_named_error(name):
    path = BAD / name
    with pytest.raises(ValueError) as info:
        parse(path, strict=True)  # the inertia files load with a warning without strict
    assert isinstance(info.value, urdf.URDFError)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    assert EXPECTED[name] in message, message


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_text_raises_named_error(name):
    with pytest.raises(urdf.URDFError) as info:
        parse((BAD / name).read_bytes(), strict=True)
    message = str(info.value)
    assert message.startswith("<string>: "), message
    assert EXPECTED[name] in message, message


def test_corpus_table_lists_every_file():
    files = {p.name for p in BAD.glob("*.urdf")}
    assert files == set(EXPECTED)
    assert len(files) >= 40


def test_entity_expansion_is_refused_fast():
    levels = "".join(f'<!ENTITY e{k} "{("&e%d;" % (k - 1)) * 10}">' for k in range(1, 40))
    text = f'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e0 "ha">{levels}]><robot name="&e39;"/>'
    start = time.perf_counter()
    with pytest.raises(urdf.URDFError, match="DTD/entities are not allowed"):
        urdf.parse_urdf(text)
    assert time.perf_counter() - start < 0.05


def test_undeclared_entity_is_not_resolved():
    with pytest.raises(urdf.URDFError, match="not well-formed XML: undefined entity"):
        urdf.parse_urdf('<robot name="r"><link name="&passwd;"/></robot>')


def test_missing_file_is_both_value_and_file_not_found_error(tmp_path):
    path = tmp_path / "nope.urdf"
    for source in (path, str(path)):
        with pytest.raises(urdf.URDFFileNotFoundError) as info:
            urdf.parse_urdf(source)
        assert isinstance(info.value, ValueError)
        assert isinstance(info.value, FileNotFoundError)
        assert str(info.value).startswith(f"{path}: file not found")


def test_directory_is_a_value_error(tmp_path):
    with pytest.raises(urdf.URDFError, match="cannot read the file"):
        urdf.parse_urdf(tmp_path)


def test_wrong_source_type_is_a_type_error():
    with pytest.raises(TypeError):
        urdf.parse_urdf(42)


@pytest.mark.parametrize("text", ["", "   \n"])
def test_empty_string(text):
    with pytest.raises(urdf.URDFError, match="^<string>: empty input"):
        urdf.parse_urdf(text)


# ---------------------------------------------------------------- sources

def test_path_str_text_and_bytes_agree(rng):
    path = GOOD / "rotated_inertial.urdf"
    text = path.read_text()
    specs = [parse(path), parse(str(path)), parse("\n  " + text.split("?>", 1)[1]),
             parse(path.read_bytes())]
    for spec in specs[1:]:
        same_dynamics(specs[0], spec, rng, states=1, tol=0.0)


def test_utf16_file_with_declaration(tmp_path, rng):
    text = (GOOD / "rotated_inertial.urdf").read_text()
    text = text.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    path = tmp_path / "utf16.urdf"
    path.write_bytes(text.encode("utf-16"))
    same_dynamics(parse(path), parse(GOOD / "rotated_inertial.urdf"), rng, states=1, tol=0.0)


def test_utf16_file_cannot_hide_a_dtd(tmp_path):
    path = tmp_path / "hidden.urdf"
    path.write_bytes(('<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE r [<!ENTITY x "y">]>'
                      '<robot name="&x;"><link name="a"/></robot>').encode("utf-16"))
    with pytest.raises(urdf.URDFError, match="DTD/entities are not allowed"):
        urdf.parse_urdf(path)


def test_meshes_and_package_uris_are_never_fetched(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the URDF parser opened a socket")
    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    text = (GOOD / "rotated_inertial.urdf").read_text().replace(
        '<link name="body">',
        '<link name="body"><visual><geometry><mesh filename="http://example.com/x.stl"/>'
        '</geometry></visual><collision><geometry><mesh filename="package://p/y.dae"/>'
        '</geometry></collision>')
    assert len(parse(text).bodies) == 1

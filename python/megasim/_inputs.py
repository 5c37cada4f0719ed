"""The arguments of the Python API, checked as the command line checks its options: a value of the
wrong kind raises ValueError with the CLI's message form (`NAME = VALUE is invalid: expected WHAT`),
named as the CLI names the option, never a TypeError from deep inside or a silent truncation
(int(2.5) is 2: a count given as 2.5 is refused, not rounded)."""
import numbers
import operator
import os

from . import _megasim

_INT64 = (-2**63, 2**63 - 1)


def _refuse(name, value, valid):
    return ValueError(f"{name} = {value!r} is invalid: expected {valid}")


def integer(name, value):
    """An int (a Python or numpy integer, or the text of one, as the CLI reads it) that fits in 64
    bits; bool, floats and everything else are refused."""
    if isinstance(value, str):
        try:
            value = int(value.strip(), 10)
        except ValueError:
            raise _refuse(name, value, "an integer") from None
    elif isinstance(value, bool) or not isinstance(value, numbers.Integral) and not hasattr(value, "__index__"):
        raise _refuse(name, value, "an integer")
    value = operator.index(value)
    if not _INT64[0] <= value <= _INT64[1]:
        raise _refuse(name, value, "an integer from -2^63 to 2^63-1")
    return value


def number(name, value):
    """A float from a Python or numpy number or the text of one (the C++ checks its range)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise _refuse(name, value, "a number")
    try:
        return float(value)
    except (ValueError, OverflowError):
        raise _refuse(name, value, "a number") from None


def integers(name, values):
    """A list of integers from any iterable of them (not a str: "12" is not [1, 2])."""
    if values is None:
        return []
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise _refuse(name, values, "a list of integers")
    return [integer(name, v) for v in values]


def numbers_list(name, values):
    """A list of floats from any iterable of numbers (not a str)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise _refuse(name, values, "a list of numbers")
    return [number(name, v) for v in values]


def path(name, value):
    """A path from a str or os.PathLike (bytes paths are refused: the C++ core takes text)."""
    try:
        text = os.fspath(value)
    except TypeError:
        raise _refuse(name, value, "a path (a str or os.PathLike)") from None
    if not isinstance(text, str):
        raise _refuse(name, value, "a path as text (a str or os.PathLike of str)")
    return text


def input_file(name, value, expected="a readable file megasim wrote"):
    """The path of a file to read, refused (ValueError, the CLI's message) unless it is a regular file
    (a FIFO would block the open, a device never end): scenarios/config/input_file.h."""
    value = path(name, value)
    _megasim._check_input_file(value, name, expected)
    return value


def output_file(name, value):
    """The path of a file to write, refused as the CLI refuses one (scenarios/config/output_files.h)."""
    value = path(name, value)
    _megasim._checked_output_file(value, name)
    return value


def text(name, value):
    if not isinstance(value, str):
        raise _refuse(name, value, "a str")
    return value


def scenario(value):
    """A megasim.Scenario; None is the built-in defaults, as the CLI without a scenario file."""
    if value is None:
        return _megasim.Scenario()
    if not isinstance(value, _megasim.Scenario):
        raise _refuse("scenario", value, "a megasim.Scenario (megasim.load, Scenario.from_toml, Scenario.from_dict) "
                                         "or None for the defaults")
    return value

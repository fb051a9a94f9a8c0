"""A jitted function that changes a dict or list ARGUMENT itself raises ContainerMutationError
naming the function, the argument and the line, on every call (the compiled program never runs
the Python code again, so the caller's container could not end as plain Python leaves it);
writes into arrays inside containers still reach the caller's arrays; new containers built from
the arguments are free to change (trace/container_arguments.py, docs/transformations.md)."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import jitkernel as jk
from helpers import HOST_BACKENDS


def set_key(d, lst):
    d["y"] = d["x"] * 2
    return d["x"]


def set_item(d, lst):
    lst[0] = lst[0] + 1
    return d["x"]


def set_slice(d, lst):
    lst[0:1] = [d["x"]]
    return d["x"]


def append(d, lst):
    lst.append(d["x"])
    return d["x"]


def extend(d, lst):
    lst.extend([d["x"]])
    return d["x"]


def insert(d, lst):
    lst.insert(0, d["x"])
    return d["x"]


def pop_list(d, lst):
    return lst.pop() + d["x"]


def remove(d, lst):
    lst.remove(lst[0])
    return d["x"]


def clear_list(d, lst):
    lst.clear()
    return d["x"]


def reverse(d, lst):
    lst.reverse()
    return d["x"]


def iadd_list(d, lst):
    lst += [d["x"]]
    return d["x"]


def del_key(d, lst):
    del d["x"]
    return lst[0]


def del_item(d, lst):
    del lst[0]
    return d["x"]


def pop_dict(d, lst):
    return d.pop("x")


def popitem(d, lst):
    return d.popitem()[1]


def update(d, lst):
    d.update(y=d["x"])
    return d["x"]


def setdefault(d, lst):
    return d.setdefault("y", d["x"])


def clear_dict(d, lst):
    d.clear()
    return lst[0]


def ior(d, lst):
    d |= {"y": d["x"]}
    return d["x"]


def nested_append(d, lst):
    d["inner"].append(d["x"])
    return d["x"]


def nested_set(d, lst):
    lst[1]["k"] = d["x"]
    return d["x"]


def iadd_scalar_item(d, lst):
    d["n"] += 1  # a Python scalar is immutable: Python stores a new value into the dict
    return d["x"]


MUTATIONS = [iadd_scalar_item, set_key, set_item, set_slice, append, extend, insert, pop_list, remove, clear_list, reverse, iadd_list,
             del_key, del_item, pop_dict, popitem, update, setdefault, clear_dict, ior, nested_append, nested_set]


def _arguments():
    d = {"x": np.arange(3.0), "inner": [np.ones(2)], "n": 1.5}
    lst = [np.zeros(3), {"k": np.ones(1)}]
    return d, lst


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", MUTATIONS, ids=lambda f: f.__name__)
def test_a_container_mutation_raises_naming_the_argument_and_line_on_every_call(fn, backend):
    f = jk.jit(fn, backend=backend)
    for _ in range(2):  # no call is cached: the second raises as the first
        d, lst = _arguments()
        before = (sorted(d), len(lst), sorted(lst[1]), len(d["inner"]))
        with pytest.raises(jk.ContainerMutationError) as info:
            f(d, lst)
        message = str(info.value)
        assert repr(fn.__name__) in message and "test_container_arguments.py" in message
        assert any(f"argument `{name}`" in message for name in ("d", "lst", "d['inner']", "lst[1]"))
        assert (sorted(d), len(lst), sorted(lst[1]), len(d["inner"])) == before  # the caller's containers


def test_the_error_is_a_jit_error_and_names_the_mutating_statement():
    with pytest.raises(jk.ContainerMutationError, match=r"`d\['inner'\]\.append\(\.\.\.\)` mutates the list "
                                                         r"argument `d\['inner'\]`") as info:
        jk.jit(nested_append)(*_arguments())
    assert isinstance(info.value, jk.JitError) and isinstance(info.value, jk.UnsupportedOperationError)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_arrays_inside_containers_are_written_back_and_copies_are_free(backend):
    def f(d, lst):
        d["x"][0] = 99.0             # an array inside a dict argument: written back
        lst[1]["k"] += 1.0           # ... inside a dict inside a list
        mine = dict(d)               # copies made inside the function change freely
        mine["y"] = d["x"] * 2
        more = list(lst) + [1.0]
        more.append(2.0)
        other = copy.copy(d)
        other.pop("x")
        return {**d, "y": mine["y"]}, len(more), len(other)

    for _ in range(2):  # the first call and a cached one
        d, lst = _arguments()
        want_d, want_lst = _arguments()
        want = f(want_d, want_lst)
        got = jk.jit(f, backend=backend)(d, lst)
        np.testing.assert_array_equal(got[0]["y"], want[0]["y"])
        assert type(got[0]) is dict and got[1] == want[1]
        np.testing.assert_array_equal(d["x"], want_d["x"])
        np.testing.assert_array_equal(lst[1]["k"], want_lst[1]["k"])
        assert sorted(d) == sorted(want_d) and len(lst) == len(want_lst)


def test_returning_an_argument_container_returns_a_plain_one():
    d, lst = _arguments()
    out_d, out_lst = jk.jit(lambda d, lst: (d, lst))(d, lst)
    assert type(out_d) is dict and type(out_lst) is list and type(out_lst[1]) is dict
    out_lst.append(1)  # the caller's own, mutable result

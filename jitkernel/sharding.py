"""Sharding, the JAX way: meshes, partition specs, sharded arrays.

Devices are the local devices (`jk.devices()`: the CPU, then any CUDA GPUs), virtual CPU
devices of this process (`cpu_devices(n)`, as XLA's `--xla_force_host_platform_device_count`),
or the workers of a `dask.distributed.Client` (`jk.dask_devices(client)`). `NamedSharding`
follows JAX 0.10.2: `devices_indices_map` returns the same slices, and the same errors are
raised (an axis not in the mesh, a mesh axis used twice, a dimension that the mesh axes do not
divide). A jitted function called with `ShardedArray` arguments runs through the Dask path
(jitkernel/distributed) and returns ShardedArrays (docs/distributed.md, "Sharding").

>>> import numpy as np, jitkernel as jk
>>> from jitkernel.sharding import Mesh, NamedSharding, P, cpu_devices
>>> mesh = Mesh(np.array(cpu_devices(4)).reshape(2, 2), ("x", "y"))
>>> s = NamedSharding(mesh, P("x", None))
>>> s.devices_indices_map((4, 6))[cpu_devices(4)[2]]
(slice(2, 4, None), slice(None, None, None))
>>> x = jk.device_put(np.arange(8.0).reshape(4, 2), s)
>>> float(np.asarray(x).sum())
28.0
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np

from .backends import platform_devices
from .backends.cuda import missing_for_cuda
from .device_array import Device, gpu_devices, put
from .errors import UnsupportedOperationError
from .tree import tree_flatten, tree_unflatten

__all__ = ["Device", "devices", "cpu_devices", "dask_devices", "Mesh", "PartitionSpec", "P", "NamedSharding",
           "DuplicateSpecError", "IndivisibleError", "Shard", "ShardedArray", "device_put", "visualize_sharding"]


# -- devices ---------------------------------------------------------------------------------
def cpu_devices(n: int = 1) -> list[Device]:
    """`n` CPU devices of this process (ids 0..n-1; their shards all live in this process's
    memory), as XLA's `--xla_force_host_platform_device_count=n` gives JAX.

    >>> cpu_devices(2)
    [CpuDevice(id=0), CpuDevice(id=1)]
    """
    if n < 1:
        raise ValueError(f"cpu_devices needs n >= 1, got {n}")
    return [Device(i, "cpu", "cpu") for i in range(n)]


def devices(backend: str | None = None) -> list[Device]:
    """The local devices, the CPU device first, then one GPU device per CUDA device where
    PyCUDA, the driver and a device exist (jitkernel/device_array.py). `backend` "cpu" or
    "gpu" ("cuda") keeps that platform's devices, as `jax.devices("gpu")`; RuntimeError when
    it has none.

    >>> devices()[0], devices("cpu")
    (CpuDevice(id=0), [CpuDevice(id=0)])
    """
    if backend is None:
        return cpu_devices(1) + gpu_devices()
    platform = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu"}.get(backend)
    if platform is None:
        registered = platform_devices(backend)  # a backend's own platform ("tpu")
        if registered is None:
            raise RuntimeError(f"Unknown backend {backend!r}: jitkernel's device platforms are 'cpu', 'gpu' and "
                               "those of the registered backends ('tpu')")
        if not registered:
            raise RuntimeError(f"Unknown backend: {backend!r} requested, but no {backend} devices are present")
        return registered
    found = cpu_devices(1) if platform == "cpu" else gpu_devices()
    if not found:
        raise RuntimeError(f"Unknown backend: 'gpu' requested, but no GPU devices are present: "
                           f"{'; '.join(missing_for_cuda()) or 'the CUDA driver found no device'}")
    return found


def dask_devices(client: Any) -> list[Device]:
    """One device per worker of the `dask.distributed.Client` `client`, ordered by address."""
    addresses = sorted(client.scheduler_info()["workers"])
    return [Device(i, "dask-worker", "dask-worker", address=a, client=client) for i, a in enumerate(addresses)]


# -- mesh, partition spec, named sharding -------------------------------------------------------
class DuplicateSpecError(ValueError):
    """A mesh axis used by two dimensions of one PartitionSpec (JAX's DuplicateSpecError)."""


class IndivisibleError(ValueError):
    """A dimension the mesh axes sharding it do not divide (JAX's IndivisibleError)."""


class Mesh:
    """A NumPy array of devices whose axes are named: `Mesh(devices, ("x", "y"))`."""

    def __init__(self, devices: Any, axis_names: str | Sequence[str]) -> None:
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        arr = np.empty(np.shape(devices) if not isinstance(devices, np.ndarray) else devices.shape, dtype=object)
        arr[...] = devices if isinstance(devices, np.ndarray) else _nested(devices)
        axis_names = tuple(axis_names)
        if arr.ndim != len(axis_names):
            raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to equal the length of its "
                             f"second argument (`axis_names`), but got devices.ndim == {arr.ndim} and "
                             f"len(axis_names) == {len(axis_names)}.")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh axis names must be unique, got {axis_names}")
        flat = list(arr.flat)
        if not all(isinstance(d, Device) for d in flat):
            raise TypeError("Mesh devices must be jitkernel devices (jk.devices(), jk.dask_devices(client), "
                            "jk.sharding.cpu_devices(n))")
        if len(set(flat)) != len(flat):
            raise ValueError(f"Mesh devices must be distinct, got {flat}")
        self.devices = arr
        self.axis_names = axis_names

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return int(self.devices.size)

    def __repr__(self) -> str:
        return f"Mesh(axis_sizes={self.devices.shape}, axis_names={self.axis_names})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Mesh) and self.axis_names == other.axis_names
                and self.devices.shape == other.devices.shape and list(self.devices.flat) == list(other.devices.flat))

    def __hash__(self) -> int:
        return hash((self.axis_names, self.devices.shape, tuple(self.devices.flat)))


def _nested(devices: Any) -> Any:
    return [_nested(d) for d in devices] if isinstance(devices, (list, tuple)) else devices


class PartitionSpec(tuple):
    """Per array dimension: None (not split), a mesh axis name, or a tuple of them (split over
    their product, the first most significant). Dimensions past its length are not split."""

    def __new__(cls, *entries: None | str | Sequence[str]) -> "PartitionSpec":
        for e in entries:
            if not (e is None or isinstance(e, str) or (isinstance(e, tuple) and all(isinstance(a, str) for a in e))):
                raise TypeError(f"PartitionSpec entries must be None, a mesh axis name or a tuple of names, got {e!r}")
        return super().__new__(cls, entries)

    def __repr__(self) -> str:
        return "P(" + ", ".join(repr(e) for e in self) + ("," if len(self) == 1 else "") + ")"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartitionSpec) and tuple(self) == tuple(other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(("PartitionSpec", tuple(self)))

    def __reduce__(self) -> Any:
        return (PartitionSpec, tuple(self))


P = PartitionSpec


def _axes(entry: None | str | tuple[str, ...]) -> tuple[str, ...]:
    return () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)


class NamedSharding:
    """How an array is laid out over a Mesh: `NamedSharding(mesh, P("x", None))`."""

    def __init__(self, mesh: Mesh, spec: PartitionSpec) -> None:
        if not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec)
        seen: set[str] = set()
        for entry in spec:
            for a in _axes(entry):
                if a not in mesh.axis_names:
                    raise ValueError(f"Resource axis: {a} of {spec!r} is not found in mesh: {mesh.axis_names}.")
                if a in seen:
                    raise DuplicateSpecError(
                        f"A single NamedSharding spec specification can map every mesh axis to at most one "
                        f"positional dimension, but {spec!r} has duplicate entries for `{a}`")
                seen.add(a)
        self.mesh, self.spec = mesh, spec

    def __repr__(self) -> str:
        sizes = ", ".join(f"{n!r}: {s}" for n, s in self.mesh.shape.items())
        return f"NamedSharding(mesh=Mesh({sizes}), spec={self.spec!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedSharding) and self.mesh == other.mesh and self.spec == other.spec

    def __hash__(self) -> int:
        return hash((self.mesh, self.spec))

    @property
    def device_set(self) -> set[Device]:
        return set(self.mesh.devices.flat)

    def _tiling(self, shape: tuple[int, ...]) -> list[int]:
        """How many pieces each dimension is split into (checked: the pieces divide it)."""
        shape = tuple(shape)
        if len(self.spec) > len(shape) and any(e is not None for e in self.spec[len(shape):]):
            raise ValueError(f"Sharding {self!r} is only valid for values of rank at least {len(self.spec)}, "
                             f"but was applied to a value of rank {len(shape)}.")
        sizes = self.mesh.shape
        tiling = [math.prod(sizes[a] for a in _axes(self.spec[d] if d < len(self.spec) else None))
                  for d in range(len(shape))]
        for d, (n, t) in enumerate(zip(shape, tiling)):
            if n % t:
                raise IndivisibleError(
                    f"Sharding {self!r} implies that array axis {d} is partitioned {t} times, but the dimension "
                    f"size is {n} (full shape: {shape}, per-dimension tiling factors: {tiling} should evenly "
                    f"divide the shape)")
        return tiling

    def shard_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape of each shard of an array of `shape`."""
        return tuple(n // t for n, t in zip(shape, self._tiling(shape)))

    def devices_indices_map(self, shape: tuple[int, ...]) -> dict[Device, tuple[slice, ...]]:
        """{device: the slices of an array of `shape` it holds}, in the mesh's device order (JAX's)."""
        shape = tuple(shape)
        tiling = self._tiling(shape)
        sizes = self.mesh.shape
        out: dict[Device, tuple[slice, ...]] = {}
        for coords in np.ndindex(*self.mesh.devices.shape):
            at = dict(zip(self.mesh.axis_names, coords))
            index = []
            for d, n in enumerate(shape):
                axes = _axes(self.spec[d] if d < len(self.spec) else None)
                if not axes:
                    index.append(slice(None))
                    continue
                block = 0
                for a in axes:  # mixed radix, the first axis most significant
                    block = block * sizes[a] + at[a]
                step = n // tiling[d]
                index.append(slice(block * step, (block + 1) * step))
            out[self.mesh.devices[coords]] = tuple(index)
        return out

    def is_fully_replicated(self) -> bool:
        return all(not _axes(e) for e in self.spec)


# -- sharded arrays ----------------------------------------------------------------------------
@dataclasses.dataclass
class Shard:
    """One device's piece: `data` is a NumPy array (CPU devices) or a distributed Future."""
    device: Device
    index: tuple[slice, ...]
    data: Any

    def numpy(self) -> np.ndarray:
        if self.device.platform == "cpu":
            return self.data
        return self.device.client.gather(self.data)


def _block_of(index: tuple[slice, ...], shape: tuple[int, ...], shard_shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(0 if s.start is None else s.start // b for s, b in zip(index, shard_shape))


class ShardedArray:
    """An array split over devices by a NamedSharding (`jk.device_put(x, sharding)`)."""

    _jk_sharded = True  # how api.Jitted._call recognises it without importing this module

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, sharding: NamedSharding, shards: list[Shard]) -> None:
        self.shape, self.dtype, self.sharding = tuple(shape), np.dtype(dtype), sharding
        self.addressable_shards = shards

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def _unique_shards(self) -> dict[tuple[int, ...], Shard]:
        """One shard per block (the first device holding it; the others are replicas)."""
        bs = self.sharding.shard_shape(self.shape)
        blocks: dict[tuple[int, ...], Shard] = {}
        for s in self.addressable_shards:
            blocks.setdefault(_block_of(s.index, self.shape, bs), s)
        return blocks

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        blocks = list(self._unique_shards().values())
        remote = [s for s in blocks if s.device.platform != "cpu"]
        fetched = dict(zip(map(id, remote), remote[0].device.client.gather([s.data for s in remote]))) if remote else {}
        for s in blocks:
            out[s.index] = fetched[id(s)] if id(s) in fetched else s.data
        return out if dtype is None else out.astype(dtype, copy=False)

    def to_dask(self) -> Any:
        """A Dask array whose chunks are the shards (worker shards stay on their workers)."""
        import dask
        import dask.array as da
        bs = self.sharding.shard_shape(self.shape)
        blocks = self._unique_shards()

        def piece(s: Shard) -> Any:
            if s.device.platform == "cpu":
                return da.from_array(s.data, chunks=s.data.shape)
            return da.from_delayed(dask.delayed(s.data), shape=bs, dtype=self.dtype)

        if not self.shape:
            return piece(next(iter(blocks.values())))
        grid = tuple(n // b if b else 1 for n, b in zip(self.shape, bs))

        def nest(prefix: tuple[int, ...]) -> Any:
            if len(prefix) == len(grid):
                return piece(blocks[prefix])
            return [nest(prefix + (i,)) for i in range(grid[len(prefix)])]

        return da.block(nest(()))

    def __repr__(self) -> str:
        body = np.array2string(np.asarray(self), separator=", ", prefix="ShardedArray(")
        return f"ShardedArray({body}, dtype={self.dtype}, sharding={self.sharding!r})"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]


def _is_sharded(x: Any) -> bool:
    return isinstance(x, ShardedArray)


def device_put(x: Any, sharding: NamedSharding | Device | None = None) -> Any:
    """`x` laid out by `sharding`: a ShardedArray. Without one: `x` as a NumPy array (the CPU
    device's memory is this process's). A Device: that device alone (replicated spec `P()`);
    a GPU device (`jk.devices("gpu")`): a `jk.DeviceArray` in its memory (docs/gpu.md).

    >>> import numpy as np
    >>> device_put([1, 2]).tolist()
    [1, 2]
    """
    if sharding is None:
        return np.asarray(x)
    if isinstance(sharding, Device) and sharding.platform == "gpu":
        # a jk.DeviceArray on that GPU (docs/gpu.md)
        return put(x, sharding)
    if isinstance(sharding, Device) and hasattr(sharding, "put"):
        return sharding.put(x)  # a backend's own device (a TPU: docs/tpu.md)
    if isinstance(sharding, Device):
        sharding = NamedSharding(Mesh(np.array([sharding], dtype=object), ("d",)), PartitionSpec())
    if not isinstance(sharding, NamedSharding):
        raise TypeError(f"device_put takes a NamedSharding or a Device, got {type(sharding).__name__}")
    value = np.asarray(x)
    if len(sharding.spec) > value.ndim:
        raise ValueError(f"One of device_put args is incompatible with its sharding annotation {sharding!r}: "
                         f"Sharding {sharding!r} is only valid for values of rank at least {len(sharding.spec)}, "
                         f"but was applied to a value of rank {value.ndim}.")
    if any(d.platform == "gpu" for d in sharding.mesh.devices.flat):
        raise UnsupportedOperationError("device_put: a NamedSharding over GPU devices is not supported yet; "
                                        "jk.device_put(x, gpu) puts the whole array on one GPU (docs/gpu.md)")
    indices = sharding.devices_indices_map(value.shape)
    shards = []
    for dev, idx in indices.items():
        block = np.ascontiguousarray(value[idx])
        if dev.platform == "cpu":
            shards.append(Shard(dev, idx, block))
        else:  # hash=False: replicas of one block get distinct keys, one per worker
            fut = dev.client.scatter(block, workers=[dev.address], hash=False)
            shards.append(Shard(dev, idx, fut))
    return ShardedArray(value.shape, value.dtype, sharding, shards)


# -- jitted functions on sharded arguments ---------------------------------------------------------
def _identity(x: Any) -> Any:
    return x


def _layout(dask_out: Any, sharding: NamedSharding, shape: tuple[int, ...], dtype: np.dtype) -> ShardedArray:
    """The Dask array `dask_out` computed into shards placed as `sharding` says."""
    indices = sharding.devices_indices_map(shape)
    devices_ = list(indices)
    if devices_[0].platform == "cpu":
        value = np.asarray(dask_out.compute())
        return ShardedArray(shape, dtype, sharding, [Shard(d, i, np.ascontiguousarray(value[i])) for d, i in indices.items()])
    client = devices_[0].client
    bs = sharding.shard_shape(shape)
    arr = dask_out.rechunk(bs) if shape else dask_out
    keys = sorted({_block_of(i, shape, bs) for i in indices.values()})
    futures = dict(zip(keys, client.compute([arr.blocks[k] if shape else arr for k in keys])))  # one graph
    shards = []
    for d, i in indices.items():
        # moved onto its device's worker (a no-op task where it already is)
        fut = client.submit(_identity, futures[_block_of(i, shape, bs)], workers=[d.address], pure=False)
        shards.append(Shard(d, i, fut))
    from distributed import wait
    wait([sh.data for sh in shards])  # computed at the call, as for NumPy arguments: errors surface here
    for sh in shards:
        if sh.data.status == "error":
            sh.data.result()  # raises the task's error
    return ShardedArray(shape, dtype, sharding, shards)


def call(jitted: Any, args: tuple, kwargs: dict) -> Any:
    """`jitted(*args, **kwargs)` with ShardedArray leaves: runs through the Dask path; each output
    laid out like the first sharded argument where its shape allows (`_output_sharding`), else
    on that argument's first device alone."""
    # the Dask partitioner is imported on the first sharded call, not by every `import jitkernel`
    from .distributed import call as dask_call, is_dask_array
    leaves, treedef = tree_flatten((args, kwargs))
    sharded = [leaf for leaf in leaves if _is_sharded(leaf)]
    clients = {id(d.client) for s in sharded for d in s.sharding.device_set if d.client is not None}
    if len(clients) > 1:
        raise ValueError("ShardedArray arguments on the workers of different Dask clients")
    if any(d.platform != "cpu" for s in sharded for d in s.sharding.device_set) and \
            any(d.platform == "cpu" for s in sharded for d in s.sharding.device_set):
        raise ValueError("ShardedArray arguments on both local CPU devices and Dask workers: device_put them "
                         "onto one kind of device")
    first = sharded[0]
    new_args, new_kwargs = tree_unflatten(treedef, [leaf.to_dask() if _is_sharded(leaf) else leaf for leaf in leaves])
    out = dask_call(jitted, new_args, new_kwargs)
    out_leaves, out_tree = tree_flatten(out)
    results = []
    for leaf in out_leaves:
        if not is_dask_array(leaf):
            results.append(leaf)
            continue
        sharding = _output_sharding(first, tuple(leaf.shape))
        results.append(_layout(leaf, sharding, tuple(leaf.shape), np.dtype(leaf.dtype)))
    return tree_unflatten(out_tree, results)


def _output_sharding(first: ShardedArray, shape: tuple[int, ...]) -> NamedSharding:
    """The first sharded argument's sharding where it is valid for `shape` (its spec fits the
    rank and its mesh axes divide the dimensions they split); else the first device alone.
    Placement only: any layout holds the same values."""
    try:
        first.sharding.shard_shape(shape)
    except ValueError:
        pass
    else:
        if len(first.sharding.spec) <= len(shape):
            return first.sharding
    device = first.sharding.mesh.devices.flat[0]
    return NamedSharding(Mesh(np.array([device], dtype=object), ("d",)), PartitionSpec())


# -- pictures ------------------------------------------------------------------------------------
class ShardingPicture:
    """What `visualize_sharding` returns: the text grid (str(), printed) and a PNG (inline)."""

    def __init__(self, text: str, cells: list[tuple[int, int, int, int, str]], shape: tuple[int, int]) -> None:
        self.text, self.cells, self.grid_shape = text, cells, shape

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return self.text == (other.text if isinstance(other, ShardingPicture) else other)

    def figure(self) -> Any:
        """A matplotlib Figure (with its own Agg canvas) of the boxes."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        rows, cols = self.grid_shape
        fig = Figure(figsize=(min(8, 1.2 + 1.6 * cols), min(6, 0.6 + 1.0 * rows)))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        colors = {}
        for r0, r1, c0, c1, label in self.cells:
            color = colors.setdefault(label, f"C{len(colors) % 10}")
            ax.add_patch(_rect(c0, rows - r1, c1 - c0, r1 - r0, color))
            ax.text((c0 + c1) / 2, rows - (r0 + r1) / 2, label, ha="center", va="center", fontsize=9)
        ax.set_xlim(0, cols)
        ax.set_ylim(0, rows)
        ax.set_axis_off()
        return fig

    def _repr_png_(self) -> bytes:
        import io
        buf = io.BytesIO()
        self.figure().savefig(buf, format="png", dpi=100, bbox_inches="tight")
        return buf.getvalue()


def _rect(x: float, y: float, w: float, h: float, color: str) -> Any:
    from matplotlib.patches import Rectangle
    return Rectangle((x, y), w, h, facecolor=color, alpha=0.35, edgecolor="black", linewidth=1.5)


def _cells(x: ShardedArray) -> tuple[list[tuple[int, int, int, int, str]], tuple[int, int]]:
    """Per block of the array (rows x columns; a 1-d array is one row): its grid position and the
    devices holding it."""
    if x.ndim not in (1, 2):
        raise ValueError(f"visualize_sharding draws 1-d and 2-d arrays, got rank {x.ndim}")
    bs = x.sharding.shard_shape(x.shape)
    holders: dict[tuple[int, ...], list[Device]] = {}
    for d, idx in x.sharding.devices_indices_map(x.shape).items():
        holders.setdefault(_block_of(idx, x.shape, bs), []).append(d)
    shape2 = (1,) + x.shape if x.ndim == 1 else x.shape
    bs2 = (1,) + bs if x.ndim == 1 else bs
    grid = (shape2[0] // bs2[0], shape2[1] // bs2[1])
    cells = []
    for block, devs in sorted(holders.items()):
        r, c = (0, block[0]) if x.ndim == 1 else block
        label = _device_label(devs)
        cells.append((r, r + 1, c, c + 1, label))
    return cells, grid


def _device_label(devs: list[Device]) -> str:
    if all(d.platform == "cpu" for d in devs):
        return "CPU " + ",".join(str(d.id) for d in devs)
    return ",".join(d.label for d in devs)


def _text(cells: list[tuple[int, int, int, int, str]], grid: tuple[int, int]) -> str:
    rows, cols = grid
    width = max(len(c[4]) for c in cells) + 4
    labels = {(c[0], c[2]): c[4] for c in cells}
    border = "+" + "+".join("-" * width for _ in range(cols)) + "+"
    lines = [border]
    for r in range(rows):
        lines.append("|" + "|".join(" " * width for _ in range(cols)) + "|")
        lines.append("|" + "|".join(labels[(r, c)].center(width) for c in range(cols)) + "|")
        lines.append("|" + "|".join(" " * width for _ in range(cols)) + "|")
        lines.append(border)
    return "\n".join(lines)


def visualize_sharding(x: ShardedArray, *, show: bool = True) -> ShardingPicture:
    """Which device holds which block of the 1-d or 2-d ShardedArray `x`, as
    `jax.debug.visualize_array_sharding`: a grid of boxes (printed unless show=False; str() of the
    result) and, in a notebook, a picture (`_repr_png_`).

    >>> import numpy as np
    >>> m = Mesh(np.array(cpu_devices(2)), ("x",))
    >>> print(visualize_sharding(device_put(np.arange(4), NamedSharding(m, P("x"))), show=False))
    +---------+---------+
    |         |         |
    |  CPU 0  |  CPU 1  |
    |         |         |
    +---------+---------+
    """
    if not isinstance(x, ShardedArray):
        raise TypeError(f"visualize_sharding takes a ShardedArray (jk.device_put(x, sharding)), got {type(x).__name__}")
    cells, grid = _cells(x)
    picture = ShardingPicture(_text(cells, grid), cells, grid)
    if show:
        print(picture.text)
    return picture

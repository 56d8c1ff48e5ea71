"""VP103 dataloader-starves-gpu: a DataLoader that loads in the training process or skips pinning.

One finding per `torch.utils.data.DataLoader(...)` call (or torchdata's drop-in `StatefulDataLoader`;
by qualified name, however imported)
naming every problem: `num_workers` missing or 0; `pin_memory` missing or False in a module that
uses CUDA (a `torch.cuda.*` call, a `.cuda()` call, or a `"cuda"`/`"cuda:N"` device string);
`persistent_workers` missing or False while `num_workers` > 0. A setting passed as a variable
is trusted, and a call with `*args`/`**kwargs` is not judged at all. A loader at the top level of
a module that never names a device (a dataset module's `__main__` demo) is left alone; one in a
function is judged, since a framework or a caller may put its batches on an accelerator (a
Lightning `train_dataloader`). Known limit: a dataset that
already lives on the GPU (a `TensorDataset` of CUDA tensors) gains nothing from workers or
pinning; that cannot be seen from the call and is reported like any other loader.
"""

from __future__ import annotations

import libcst as cst

from verifier.findings import Category, Severity, SeverityByHeat
from verifier.static.dataloader import LoaderSettings, loader_settings
from verifier.static.deferred import deferred
from verifier.static.devices import DeviceEvidence
from verifier.static.heat import Where
from verifier.static.names import dotted_name, keyword_arg, positional_arg
from verifier.static.places import Place
from verifier.static.rule import Invalid, Rule
from verifier.static.walk import iter_descendants


class DataLoaderStarvesGpu(Rule):
    code = "VP103"
    name = "dataloader-starves-gpu"
    category = Category.DATA
    severity = SeverityByHeat.always(Severity.LOW)
    cost = "batches prepared on the training thread (or workers forked again every epoch) while the device waits"
    tokens = ("DataLoader",)
    summary = (
        "Finds `DataLoader(...)` with `num_workers` missing or 0, `pin_memory` off in a module "
        "that uses CUDA, or `persistent_workers` off while workers are used."
    )
    why = (
        "With `num_workers=0` every batch is read, decoded and collated in the training process, "
        "between two steps, while the GPU waits. Without `pin_memory=True` each batch is copied "
        "from pageable memory, which blocks the host and cannot overlap with compute. Without "
        "`persistent_workers=True` the worker processes are torn down and started again (with "
        "a copy of the dataset) at the start of every epoch."
    )
    example = """\
loader = DataLoader(dataset, batch_size=64, shuffle=True)
for x, y in loader:
    x, y = x.cuda(), y.cuda()
"""
    use_instead = """\
loader = DataLoader(
    dataset, batch_size=64, shuffle=True,
    num_workers=4, pin_memory=True, persistent_workers=True,
)
for x, y in loader:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
"""
    fix = "Pass `num_workers=N` (N > 0), `pin_memory=True` when training on CUDA, and `persistent_workers=True`."
    references = (
        "https://pytorch.org/docs/stable/data.html#multi-process-data-loading",
        "https://pytorch.org/docs/stable/data.html#memory-pinning",
        "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#enable-async-data-loading-and-augmentation",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._devices = DeviceEvidence()
        self._loaders: list[tuple[cst.Call, LoaderSettings, Where]] = []
        # Dataset classes of this module whose `__getitem__` calls nothing (it hands back stored
        # values, e.g. a prompt string): nothing to load, so workers and pinning buy nothing.
        self._stored_value_datasets: set[str] = set()
        self._dataset_of: dict[str, str] = {}
        # `TensorDataset(x.to(device), y.to(device))`: its batches are slices of tensors already on
        # the device; there is nothing to load or pin (the calls, and the names bound to one).
        self._device_datasets: set[int] = set()
        self._device_dataset_names: set[str] = set()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        for statement in node.body.body if type(node.body) is cst.IndentedBlock else ():
            if type(statement) is cst.FunctionDef and statement.name.value == "__getitem__":
                if not any(type(n) is cst.Call for n in iter_descendants(statement.body)):
                    self._stored_value_datasets.add(node.name.value)

    def leave_Assign(self, node: cst.Assign) -> None:
        value = node.value
        made = value.func.value if type(value) is cst.Call and type(value.func) is cst.Name else None
        for target in node.targets:
            if type(target.target) is cst.Name:
                if made is not None:
                    self._dataset_of[target.target.value] = made
                else:
                    self._dataset_of.pop(target.target.value, None)
                if id(value) in self._device_datasets:
                    self._device_dataset_names.add(target.target.value)
                else:
                    self._device_dataset_names.discard(target.target.value)

    def visit_Call(self, node: cst.Call) -> None:
        self._devices.see_call(node, self.context.imports)
        if self._holds_device_tensors(node):
            self._device_datasets.add(id(node))
        settings = loader_settings(node, self.context.imports)
        if settings is not None and not self._serves_stored_values(node):
            self._loaders.append((node, settings, self.context.heat.here()))

    def _holds_device_tensors(self, call: cst.Call) -> bool:
        """`TensorDataset(a, b)` of tensors all shown on the accelerator."""
        name = self.context.imports.call_name(call) or dotted_name(call.func) or ""
        if name.rsplit(".", 1)[-1] != "TensorDataset" or not call.args or any(arg.star for arg in call.args):
            return False
        places = self.context.places
        return all(
            (placement := places.placement_of(arg.value)) is not None and placement.place is Place.DEVICE
            for arg in call.args
        )

    def _serves_stored_values(self, loader: cst.Call) -> bool:
        dataset = keyword_arg(loader, "dataset") or positional_arg(loader, 0)
        if dataset is None:
            return False
        value = dataset.value
        if type(value) is cst.Call and self._holds_device_tensors(value):
            return True
        if type(value) is cst.Name and value.value in self._device_dataset_names:
            return True
        if type(value) is cst.Call and type(value.func) is cst.Name:
            return value.func.value in self._stored_value_datasets
        return type(value) is cst.Name and self._dataset_of.get(value.value) in self._stored_value_datasets

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self._devices.see_string(node)

    def leave_Module(self, node: cst.Module) -> None:
        # Judged at the end: CUDA may first be mentioned after the loader is built.
        on_host = not self.context.may_use_accelerator
        for call, settings, where in self._loaders:
            if on_host and where.function is None:
                # A module that never names a device, at its top level (a dataset module's
                # `__main__` demo that plots a few samples): there is no GPU to starve.
                continue
            problems = self._problems(settings)
            if problems:
                # Persistent workers only matter when a loader is iterated again (epochs); a
                # module without an epoch loop (one pass over an endless sampler) has none.
                only_persistence = all("persistent_workers" in wanted for _, wanted in problems)
                self.report(
                    call,
                    "DataLoader starves the GPU: " + "; ".join(problem for problem, _ in problems),
                    where=where,
                    fix="Pass " + ", ".join(wanted for _, wanted in problems) + ".",
                    severity=(
                        deferred(lambda where=where: self._if_epochs(where), outcomes=(self.severity,))
                        if only_persistence else None
                    ),
                )

    def _if_epochs(self, where: Where) -> SeverityByHeat | None:
        # `def train_dataloader(self)`: a framework hook whose loader is iterated every epoch.
        if where.function is not None and where.function.key.endswith("_dataloader"):
            return self.severity
        heat = self.context.heat
        loops = heat.module_loops + [loop for fn in heat.functions for loop in fn.loops]
        return self.severity if any(loop.is_epoch for loop in loops) else None

    def _problems(self, settings: LoaderSettings) -> list[tuple[str, str]]:
        """(what is wrong, the argument that fixes it) for each problem of one loader."""
        problems = []
        if settings.num_workers == 0:
            problems.append(
                ("`num_workers` is 0, so batches are loaded in the training process between steps",
                 "`num_workers=N` (N > 0)")
            )
        if settings.pin_memory is False and self._devices.uses_cuda:
            problems.append(("`pin_memory` is off, so every host-to-device copy blocks", "`pin_memory=True`"))
        if settings.num_workers is None and settings.persistent_workers is False:
            # `num_workers=args.workers`: workers are configured (the usual default is > 0).
            problems.append(
                ("`persistent_workers` is off while `num_workers` is configured, so any workers are "
                 "restarted every epoch", "`persistent_workers=True` (when workers > 0)")
            )
        elif settings.num_workers and settings.persistent_workers is False:
            problems.append(
                ("`persistent_workers` is off, so workers are restarted every epoch", "`persistent_workers=True`")
            )
        return problems

    VALID = (
        """\
import torch
from torch.utils.data import DataLoader
loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True, persistent_workers=True)
model.cuda()
""",
        # A dataset module's demo: it never names a device, so there is no GPU to starve.
        """\
from torch.utils.data import DataLoader
if __name__ == "__main__":
    loader = DataLoader(VOCLoader("data/voc"), batch_size=4)
    images, labels = next(iter(loader))
""",
        """\
from torch.utils.data import DataLoader
loader = DataLoader(dataset, batch_size=64, **loader_kwargs)
eval_loader = DataLoader(dataset, batch_size=64, num_workers=args.workers, pin_memory=use_cuda)
""",
        """\
from torch.utils.data import DataLoader
loader = DataLoader(dataset, 64, True, None, None, 8, None, False, persistent_workers=True)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
from torch.utils.data import DataLoader
device = "cuda"
loader = DataLoader(dataset, batch_size=64, shuffle=True)
""",
            line=4,
            severity=Severity.LOW,
        ),
        Invalid(
            """\
import torch.utils.data as tud
loader = tud.DataLoader(dataset, batch_size=64, num_workers=4)
for epoch in range(10):
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
""",
            line=2,
            severity=Severity.LOW,
        ),
    )

"""The shape of the house, counted from the source with `ast` (issue 32; docs/architecture.md keeps them).

    python bench/architecture_metrics.py [--repo DIR] [--json]

`--repo` is a checkout (default: this one); only its `monitor/` and `tests/test_architecture.py` (the
layers) are read, nothing is imported or run, so any commit can be measured from a throwaway worktree.

The call graph. Every function and method of `monitor/` is a node, a nested `def` one of its own (a
lambda belongs to the function it sits in). A function has an edge to every function it *names*, called
or not, as far as the source tells which: a name or `module.name` through the imports (lazy ones inside
functions too, re-exports followed), its nested defs, `Class(...)` to `__init__` and `__post_init__`,
`self.m` / `cls.m` to `m` of the class and of its subclasses, `super().m` to the bases', and `obj.m`
to `m` of the class `obj`'s annotation names (a parameter's, a class field's, `self.x = <parameter>`, a
property's or a function's return) or `x = Class(...)` makes. A callee handed a function gets an edge to
it (a callback: `run_live` hands `finish` to the worker loop). Where nothing tells (an unannotated
object, a `typing.Protocol`), `obj.m` goes to every method `m` of the package (a method name of a builtin
type, such as `add` or `get`, nowhere; an object the source shows to be another library's, `open(...)`,
nowhere): an over-approximation, which the counts narrow where they can and print so a reader can check.
The *precise* graph leaves those guesses out.

1. **Modules a pair passes from candidate to stored assessment**, "on the way": the modules of the
   functions on a call path from `relevance.select.select_candidates` to a write of the candidates
   table (the pair becomes a candidate, the screen keeps or drops it), and from
   `judge.runner.judge_pending` to a write of the assessments table (its label, its second reading). A
   write is `Model(...)` or `insert` / `update` / `delete` of the model. The start's callers (the
   pipeline) are upstream, never on the way down. "With its round trips": and the modules where a
   function reachable from a start (not upstream) takes or returns the pair in one of `PAIR_TYPES`: it
   is read, grouped, put to either judge and answered there before anything is written.
2. **Where `settings` is read**: a function *takes* it with a parameter annotated `Settings`
   (monitor/config.py's), *reads* it when it reads an attribute of a `Settings` (a parameter, a field of
   its class: as the annotations tell). An *entry* is a call site that hands a `Settings` to a function
   or class of another module, on the precise graph. Counted over the package, and along the calls that
   hand it on from the judge step (`SETTINGS_FROM_NAMES`), walked depth first in source order: the modules it
   enters, the entries, the *climbs* (an entry made from a higher layer than the one the entry before
   went into: it came back up to go down again) and the *returns* (an entry into a module it had been
   in). Again with "a Settings or one of its sections" (`settings.llm`, any class of monitor/config.py).
3. **The function that runs a week**: from the `run` command down the precise graph while exactly one
   callee still reaches every stage (sources, relevance, judge, verdicts, report): where the stages
   part is the function that sequences them. Its lines, `def` to last line.
4. **Definitions of "pending"**: functions whose body (with the private helpers of their module that
   they call) names both the candidate pairs (the `Candidate` model) and what is judged, failed or
   parked (the `Assessment` or `JudgeFailure` model), and leaves something out (SQL's `~`, a set
   difference, `not in`, `if key in done: continue`). A store function that names one side stands for
   it in its callers (`pairs_to_judge`, `judged_keys`); a caller that only combines definitions (a
   digest's tallies) defines nothing.
5. **Places that compare a judge's name to the embedded judge's names**: comparisons (`==`, `!=`,
   `in`, `not in`) with a constant of monitor/config.py named `EMBEDDED*` or an alias of one, or with
   the names themselves as literals ("embedded", "local") beside an expression that says "judge" or
   "provider".
"""

from __future__ import annotations

import argparse
import ast
import builtins
import json
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
STAGES = ("sources", "relevance", "judge", "verdicts", "report")
PAIR_PATHS = (
    ("monitor.relevance.select.select_candidates", "Candidate"),
    ("monitor.judge.runner.judge_pending", "Assessment"),
)
# The types a pair travels in (its paper and claim texts, the unit of a call): by class name, wherever
# they are defined; a type that replaces them is added here, and the old name stays for old checkouts
# (PaperDoc and ClaimQuery: relevance's paper and claim until it read PaperText and ClaimText, issue 32).
PAIR_TYPES = ("WorkUnit", "Section", "Pair", "PaperText", "ClaimText", "PaperDoc", "ClaimQuery")
# The judge step: the flow's `judge` stage since issue 32, `pipeline.judge_step` in older checkouts.
SETTINGS_FROM_NAMES = ("monitor.schedule.flow.judge", "monitor.schedule.pipeline.judge_step")
SETTINGS_CLASS = "monitor.config.Settings"
# Methods of builtin types: `x.add(...)` on a set or a session is no call into the package.
_BUILTIN_METHODS = {
    name for kind in (dict, list, set, str, bytes, tuple, int, float, frozenset) for name in dir(kind)
}
_WRITES = {"insert", "update", "delete"}


@dataclass
class Function:
    """One function or method (a nested `def` is one of its own): its dotted name, where it is, its node."""

    name: str
    module: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: str | None = None  # the dotted name of its class, for a method
    outer: str | None = None  # the function it is nested in
    nested: dict[str, str] = field(default_factory=dict)  # its nested defs by local name

    @property
    def lines(self) -> int:
        return (self.node.end_lineno or self.node.lineno) - self.node.lineno + 1


@dataclass
class Klass:
    name: str
    module: str
    node: ast.ClassDef
    methods: dict[str, str] = field(default_factory=dict)
    bases: list[str] = field(default_factory=list)
    protocol: bool = False  # a typing.Protocol: implemented by shape, not by inheritance
    fields: dict[str, ast.expr] = field(default_factory=dict)  # annotated attributes (body or __init__)


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    imports: dict[str, str] = field(default_factory=dict)  # local name -> dotted name it stands for
    defs: dict[str, str] = field(default_factory=dict)  # top-level function/class/constant -> dotted name
    constants: dict[str, ast.expr] = field(default_factory=dict)

    @property
    def part(self) -> str:
        parts = self.name.split(".")
        return parts[1] if len(parts) > 1 else "__init__"


def _args(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = node.args
    extra = [x for x in (a.vararg, a.kwarg) if x is not None]
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *extra]


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes under `node`, not entering a nested def (a function of its own) or class."""
    for child in ast.iter_child_nodes(node):
        yield child
        if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield from _own_nodes(child)


class Package:
    """The `monitor` package of one checkout, parsed, with its call graph."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.modules: dict[str, Module] = {}
        self.functions: dict[str, Function] = {}
        self.classes: dict[str, Klass] = {}
        for path in sorted((repo / "monitor").rglob("*.py")):
            parts = path.relative_to(repo).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            self.modules[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8")))
        for module in self.modules.values():
            self._index(module)
        self._subclasses: dict[str, set[str]] = defaultdict(set)
        for klass in self.classes.values():
            self._link(klass)
        self.by_method: dict[str, set[str]] = defaultdict(set)
        for fn in self.functions.values():
            if fn.cls is not None:
                self.by_method[fn.node.name].add(fn.name)
        self.edges: dict[str, set[str]] = defaultdict(set)
        self.precise: dict[str, set[str]] = defaultdict(set)  # the edges that need no guess by name
        for fn in self.functions.values():
            self._add_edges(fn, self.edges, guess=True)
            self._add_edges(fn, self.precise, guess=False)
        self.callers: dict[str, set[str]] = defaultdict(set)
        for caller, callees in self.edges.items():
            for callee in callees:
                self.callers[callee].add(caller)

    # --- indexing and name resolution ----------------------------------------------------------------

    def _index(self, module: Module) -> None:
        self._imports(module)
        for node in module.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                module.defs[node.name] = self._function(module, node, f"{module.name}.{node.name}")
            elif isinstance(node, ast.ClassDef):
                self._class(module, node)
            elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in (t for t in targets if isinstance(t, ast.Name)):
                    module.defs[target.id] = f"{module.name}.{target.id}"
                    module.constants[target.id] = node.value

    def _imports(self, module: Module) -> None:
        """Every import of the module, those inside functions too (this package imports lazily)."""
        is_package = module.path.name == "__init__.py"
        package = module.name.split(".") if is_package else module.name.split(".")[:-1]
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module.split(".") if node.module else []
                if node.level:
                    base = package[: len(package) - (node.level - 1)] + base
                for alias in node.names:
                    module.imports[alias.asname or alias.name] = ".".join([*base, alias.name])
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    module.imports[local] = alias.name if alias.asname else local

    def _function(
        self,
        module: Module,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        name: str,
        cls: str | None = None,
        outer: str | None = None,
    ) -> str:
        fn = self.functions[name] = Function(name, module.name, node, cls, outer)
        for child in _own_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                fn.nested[child.name] = self._function(
                    module, child, f"{name}.<locals>.{child.name}", cls=fn.cls, outer=name
                )
        return name

    def _class(self, module: Module, node: ast.ClassDef) -> None:
        name = module.defs[node.name] = f"{module.name}.{node.name}"
        klass = self.classes[name] = Klass(name, module.name, node)
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                klass.methods[item.name] = self._function(module, item, f"{name}.{item.name}", cls=name)
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                klass.fields[item.target.id] = item.annotation
        init = next((i for i in node.body if isinstance(i, ast.FunctionDef) and i.name == "__init__"), None)
        if init is not None:  # self.x = <a parameter>: x has the parameter's annotation
            typed = {a.arg: a.annotation for a in _args(init) if a.annotation is not None}
            for child in ast.walk(init):
                if (
                    isinstance(child, ast.Assign)
                    and isinstance(child.value, ast.Name)
                    and child.value.id in typed
                ):
                    for target in child.targets:
                        if (
                            isinstance(target, ast.Attribute)
                            and isinstance(target.value, ast.Name)
                            and target.value.id == "self"
                        ):
                            klass.fields.setdefault(target.attr, typed[child.value.id])

    def _link(self, klass: Klass) -> None:
        for base in klass.node.bases:
            head = base.value if isinstance(base, ast.Subscript) else base
            dotted = self.resolve(klass.module, head)
            if dotted in ("typing.Protocol", "typing_extensions.Protocol"):
                klass.protocol = True
            elif dotted in self.classes:
                klass.bases.append(dotted)
                self._subclasses[dotted].add(klass.name)

    def canonical(self, dotted: str, hops: int = 0) -> str:
        """`dotted` as the module, function, class or constant it names, re-exports followed."""
        if dotted in self.modules or dotted in self.functions or dotted in self.classes or hops > 8:
            return dotted
        head, _, attr = dotted.rpartition(".")
        module = self.modules.get(head)
        if module is not None:
            if attr in module.defs:
                return module.defs[attr]
            if attr in module.imports:
                return self.canonical(module.imports[attr], hops + 1)
        if head in self.classes:
            return self.method(head, attr) or dotted
        return dotted

    def resolve(self, module_name: str, expr: ast.expr, fn: Function | None = None) -> str | None:
        """The dotted name `expr` stands for in `module_name` (a module, class, function or constant;
        inside `fn`, its nested defs and those of the functions it sits in too)."""
        module = self.modules[module_name]
        if isinstance(expr, ast.Name):
            scope = fn
            while scope is not None:
                if expr.id in scope.nested:
                    return scope.nested[expr.id]
                scope = self.functions.get(scope.outer) if scope.outer else None
            if expr.id in module.defs:
                return module.defs[expr.id]
            if expr.id in module.imports:
                return self.canonical(module.imports[expr.id])
            return None
        if isinstance(expr, ast.Attribute):
            base = self.resolve(module_name, expr.value, fn)
            if base is None:
                return None
            if base in self.classes:
                return self.method(base, expr.attr)
            return self.canonical(f"{base}.{expr.attr}")
        return None

    def lineage(self, cls: str) -> Iterator[Klass]:
        """Class `cls`, then its package bases, breadth first, each once: where a name is looked up."""
        todo, seen = [cls], set()
        while todo:
            current = todo.pop(0)
            if current in seen or current not in self.classes:
                continue
            seen.add(current)
            yield self.classes[current]
            todo.extend(self.classes[current].bases)

    def method(self, cls: str, name: str) -> str | None:
        """`name` as class `cls` has it, its own or a base's."""
        return next((k.methods[name] for k in self.lineage(cls) if name in k.methods), None)

    def subclasses(self, cls: str) -> set[str]:
        out: set[str] = set()
        todo = [cls]
        while todo:
            for sub in self._subclasses.get(todo.pop(), ()):
                if sub not in out:
                    out.add(sub)
                    todo.append(sub)
        return out

    # --- what an expression is -----------------------------------------------------------------------

    def annotation_classes(self, module: str, annotation: ast.expr | None) -> set[str] | None:
        """The package classes an annotation names (`X`, `X[...]`, `X | Y`, "X"), or None where it names
        none of the package's (a builtin or another library's type: nothing of ours to call)."""
        if annotation is None:
            return set()  # unknown
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return set()
        if isinstance(annotation, ast.BinOp):
            left = self.annotation_classes(module, annotation.left)
            right = self.annotation_classes(module, annotation.right)
            return None if left is None and right is None else (left or set()) | (right or set())
        if isinstance(annotation, ast.Subscript):
            annotation = annotation.value
        if isinstance(annotation, ast.Constant):
            return None
        dotted = self.resolve(module, annotation)
        if dotted in self.classes:
            return {dotted}
        return None if dotted is not None or isinstance(annotation, ast.Name) else set()

    def receiver(self, fn: Function, expr: ast.expr) -> set[str] | None:
        """The package classes `expr` (the object a method is asked of) may be an instance of: an empty
        set when unknown, None when it is known to be none of the package's. Told by annotations (of
        parameters, of class fields and `self.x = <parameter>`, of what a property or function returns)
        and by `x = Class(...)`."""
        if isinstance(expr, ast.Name):
            if expr.id in ("self", "cls") and fn.cls is not None:
                return {fn.cls}
            scope: Function | None = fn
            while scope is not None:
                for arg in _args(scope.node):
                    if arg.arg == expr.id:
                        return self.annotation_classes(scope.module, arg.annotation)
                found, kinds = self._bound(scope, expr.id)
                if found:
                    return kinds
                scope = self.functions.get(scope.outer) if scope.outer else None
            return set()
        if isinstance(expr, ast.Attribute):
            owners = self.receiver(fn, expr.value)
            if owners is None:
                return None
            kinds: set[str] = set()
            for owner in owners:
                kinds |= self._attribute(owner, expr.attr) or set()
            return kinds
        return set()

    def _attribute(self, cls: str, name: str) -> set[str] | None:
        """The package classes attribute `name` of a `cls` holds (a field, or what a property returns)."""
        for klass in self.lineage(cls):
            if name in klass.fields:
                return self.annotation_classes(klass.module, klass.fields[name])
            method = klass.methods.get(name)
            if method is not None:
                node = self.functions[method].node
                if any(
                    isinstance(d, ast.Name) and d.id in ("property", "cached_property")
                    for d in node.decorator_list
                ):
                    return self.annotation_classes(klass.module, node.returns)
                return set()
        return set()

    def _bound(self, fn: Function, name: str) -> tuple[bool, set[str] | None]:
        """Whether `fn` binds `name` by `name = call(...)` or `with call(...) as name`, and to what: a
        package class made there, None for what a builtin or another library's call returns (`open`),
        an empty set when a package function's return is not told."""
        for node in _own_nodes(fn.node):
            value = None
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets
            ):
                value = node.value
            elif (
                isinstance(node, ast.withitem)
                and isinstance(node.optional_vars, ast.Name)
                and node.optional_vars.id == name
            ):
                value = node.context_expr
            if not isinstance(value, ast.Call):
                continue
            copied = value.func.value if isinstance(value.func, ast.Attribute) else None
            if copied is not None and getattr(value.func, "attr", "") == "model_copy":  # pydantic's copy
                if isinstance(copied, ast.Name) and copied.id == name:
                    continue  # `x = x.model_copy()`: what x was before tells
                return True, self.receiver(fn, copied)
            return True, self._made(fn, value)
        return False, set()

    def _made(self, fn: Function, call: ast.Call) -> set[str] | None:
        """What `call` returns, as `_bound` says it."""
        called = self.resolve(fn.module, call.func, fn)
        if called in self.classes:
            return {called}
        if called in self.functions:  # what it says it returns
            target = self.functions[called]
            return self.annotation_classes(target.module, target.node.returns)
        if called is None and isinstance(call.func, ast.Name) and hasattr(builtins, call.func.id):
            return None
        if called is not None and not called.startswith("monitor"):
            return None
        return set()

    # --- edges ---------------------------------------------------------------------------------------

    def body(self, fn: Function) -> Iterator[ast.AST]:
        """The nodes of `fn`'s own body (its lambdas included, its nested defs not), annotations left out."""
        skip: set[int] = set()
        nodes = list(_own_nodes(fn.node))
        for node in [*nodes, fn.node]:
            if isinstance(node, ast.arg) and node.annotation is not None:
                skip.update(id(n) for n in ast.walk(node.annotation))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
                skip.update(id(n) for n in ast.walk(node.returns))
            elif isinstance(node, ast.AnnAssign):
                skip.update(id(n) for n in ast.walk(node.annotation))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):  # a nested def: its decorators
                skip.update(id(n) for d in node.decorator_list for n in ast.walk(d))
        for node in nodes:
            if id(node) not in skip and not isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef | ast.arguments
            ):
                yield node

    def targets_of(self, fn: Function, expr: ast.expr, guess: bool = True) -> set[str]:
        """The functions `expr` (a name or attribute in `fn`) may stand for; `guess`: by method name
        where nothing else tells (see the module doc)."""
        if (
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Name)
            and expr.value.id in ("self", "cls")
            and fn.cls is not None
            and self.method(fn.cls, expr.attr)
        ):
            return self._methods({fn.cls}, expr.attr)
        if (
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Call)
            and isinstance(expr.value.func, ast.Name)
            and expr.value.func.id == "super"
            and fn.cls is not None
        ):
            found = {self.method(b, expr.attr) for b in self.classes[fn.cls].bases}
            return {f for f in found if f}
        dotted = self.resolve(fn.module, expr, fn)
        if dotted in self.functions:
            return {dotted}
        if dotted in self.classes:
            found = {self.method(dotted, m) for m in ("__init__", "__post_init__")}
            return {f for f in found if f}
        if dotted is not None or not isinstance(expr, ast.Attribute) or expr.attr.startswith("__"):
            return set()
        kinds = self.receiver(fn, expr.value)
        if kinds is None:
            return set()
        if kinds and not any(self.classes[k].protocol for k in kinds):
            return self._methods(kinds, expr.attr)
        if not guess or expr.attr in _BUILTIN_METHODS:
            return set()
        return set(self.by_method.get(expr.attr, ()))

    def _methods(self, classes: set[str], name: str) -> set[str]:
        """`name` of each class, as it has it or as any of its subclasses overrides it."""
        found = {self.method(c, name) for k in classes for c in {k, *self.subclasses(k)}}
        return {f for f in found if f}

    def _add_edges(self, fn: Function, edges: dict[str, set[str]], guess: bool) -> None:
        for node in self.body(fn):
            if isinstance(node, ast.Name | ast.Attribute):
                edges[fn.name].update(self.targets_of(fn, node, guess))
            if isinstance(node, ast.Call):  # a callee handed a function may call it (a callback)
                handed = set()
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    if isinstance(arg, ast.Name | ast.Attribute):
                        handed |= self.targets_of(fn, arg, guess=False)
                for callee in self.targets_of(fn, node.func, guess):
                    edges[callee].update(handed)

    # --- walks ---------------------------------------------------------------------------------------

    def reachable(self, starts: Iterable[str], edges: dict[str, set[str]] | None = None) -> set[str]:
        edges = self.edges if edges is None else edges
        seen = set(starts)
        todo = deque(seen)
        while todo:
            for nxt in edges.get(todo.popleft(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    def part_of(self, function: str) -> str:
        return self.modules[self.functions[function].module].part


def writes(pkg: Package, fn: Function, model: str) -> bool:
    """`fn` writes the table of `model` (a class of monitor/store/): `Model(...)`, or insert, update or
    delete of it."""
    for node in pkg.body(fn):
        if not isinstance(node, ast.Call):
            continue
        made = pkg.resolve(fn.module, node.func, fn)
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        table = pkg.resolve(fn.module, node.args[0], fn) if name in _WRITES and node.args else None
        for dotted in (made, table):
            if dotted and dotted.startswith("monitor.store.") and dotted.rsplit(".", 1)[-1] == model:
                return True
    return False


def _short(pkg: Package, name: str) -> str:
    """A function's name within its module."""
    return name.removeprefix(pkg.functions[name].module + ".")


def _takes_a_pair(pkg: Package, fn: Function) -> bool:
    """`fn` takes or returns one of PAIR_TYPES (also inside `list[...]`, `X | None`)."""
    annotations = [a.annotation for a in _args(fn.node)] + [fn.node.returns]
    for annotation in annotations:
        for node in ast.walk(annotation) if annotation is not None else ():
            written = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
            if any(t in written.replace("[", " ").replace("]", " ").split() for t in PAIR_TYPES):
                return True
            if isinstance(node, ast.Name | ast.Attribute):
                dotted = pkg.resolve(fn.module, node)
                if dotted in pkg.classes and dotted.rsplit(".", 1)[-1] in PAIR_TYPES:
                    return True
    return False


def pair_modules(pkg: Package) -> dict[str, object]:
    """Measure 1: the modules on the pair's way (on a call path to the write), per path and together,
    with their functions; and with its round trips (modules where a function reachable on the way, not
    upstream of it, takes or returns the pair in one of PAIR_TYPES: it is read, grouped, asked about and
    answered there before anything is written)."""
    on_way: dict[str, set[str]] = defaultdict(set)
    trips: dict[str, set[str]] = defaultdict(set)
    paths: dict[str, object] = {}
    for start, model in PAIR_PATHS:
        if start not in pkg.functions:
            paths[start] = "not found"
            continue
        targets = {f for f, fn in pkg.functions.items() if writes(pkg, fn, model)}
        upstream = pkg.reachable([start], pkg.callers) - {start}
        down = pkg.reachable([start]) - upstream
        way = down & pkg.reachable(targets, pkg.callers)
        modules = sorted({pkg.functions[f].module for f in way})
        paths[start] = {"writes": model, "modules": len(modules), "list": modules}
        for f in way:
            on_way[pkg.functions[f].module].add(_short(pkg, f))
        for f in down - way:
            if _takes_a_pair(pkg, pkg.functions[f]):
                trips[pkg.functions[f].module].add(_short(pkg, f))
    trips = {m: fs for m, fs in trips.items() if m not in on_way}
    return {
        "modules": len(on_way),
        "with_round_trips": len(on_way) + len(trips),
        "paths": paths,
        "functions": {m: sorted(f) for m, f in sorted(on_way.items())},
        "round_trips": {m: sorted(f) for m, f in sorted(trips.items())},
    }


def _is_settings(pkg: Package, fn: Function, expr: ast.expr, sections: bool) -> bool:
    """`expr` in `fn` is a Settings (as its annotations tell: module doc), or with `sections` a Settings or
    one of its sections (any class of monitor/config.py: `settings.llm` is an LLMSettings)."""
    if not isinstance(expr, ast.Name | ast.Attribute):
        return False
    return _settings_kinds(pkg.receiver(fn, expr), sections)


def _settings_kinds(kinds: set[str] | None, sections: bool) -> bool:
    if not kinds:
        return False
    return all(k.startswith("monitor.config.") for k in kinds) if sections else kinds == {SETTINGS_CLASS}


def settings_reads(pkg: Package, layers: dict[str, int], sections: bool = False) -> dict[str, object]:
    """Measure 2 (`sections`: a section handed on counts as the settings)."""
    takes, reads = set(), set()
    entries: list[tuple[str, str, int]] = []  # (caller, callee, line)
    carry: dict[str, list[tuple[int, str]]] = defaultdict(list)  # caller -> (line, callee), in order
    for name, fn in pkg.functions.items():
        if any(
            _settings_kinds(pkg.annotation_classes(fn.module, a.annotation), sections) for a in _args(fn.node)
        ):
            takes.add(name)
        for node in pkg.body(fn):
            if isinstance(node, ast.Attribute) and _is_settings(pkg, fn, node.value, sections):
                reads.add(name)
            if not isinstance(node, ast.Call):
                continue
            arguments = [*node.args, *(k.value for k in node.keywords)]
            if not any(_is_settings(pkg, fn, a, sections) for a in arguments):
                continue
            for callee in sorted(pkg.targets_of(fn, node.func, guess=False)):
                carry[name].append((node.lineno, callee))
                if pkg.functions[callee].module != fn.module:
                    entries.append((name, callee, node.lineno))
    modules = {pkg.functions[f].module for f in takes | reads}
    out: dict[str, object] = {
        "modules_taking_or_reading": len(modules),
        "functions_taking": len(takes),
        "functions_reading": len(reads),
        "entries": len(entries),
        "modules_entered": len({pkg.functions[c].module for _, c, _ in entries}),
    }
    start = next((name for name in SETTINGS_FROM_NAMES if name in pkg.functions), None)
    if start is not None:
        out["from"] = _carried(pkg, layers, carry, entries, start)
    return out


def _carried(
    pkg: Package,
    layers: dict[str, int],
    carry: dict[str, list[tuple[int, str]]],
    entries: list[tuple[str, str, int]],
    start: str,
) -> dict[str, object]:
    """Measure 2 along the calls that hand the settings on from `start` (the judge step), walked depth
    first in source order (each function once), as a run would first hand them on: the entries into another
    module in that order; a *climb* is an entry made from a module of a higher layer than the one the
    entry before went into (the settings came back up the stack to go down again), a *return* an entry
    into a module the walk had been in before."""
    order: list[tuple[str, str, int]] = []
    seen: set[str] = set()

    def walk(caller: str) -> None:
        seen.add(caller)
        for line, callee in sorted(carry.get(caller, ())):
            if pkg.functions[callee].module != pkg.functions[caller].module:
                order.append((caller, callee, line))
            if callee not in seen:
                walk(callee)

    walk(start)
    been = {pkg.functions[start].module}
    climbs = returns = 0
    last: str | None = None
    shown = []
    for caller, callee, line in order:
        here, there = pkg.functions[caller].module, pkg.functions[callee].module
        climb = last is not None and layers.get(pkg.modules[here].part, 0) > layers.get(
            pkg.modules[last].part, 0
        )
        came_back = there in been
        climbs, returns = climbs + climb, returns + came_back
        been |= {here, there}
        last = there
        notes = [w for w, on in (("climbs", climb), ("returns", came_back)) if on]
        shown.append(f"{here}:{line} -> {there}" + (f" ({', '.join(notes)})" if notes else ""))
    return {
        "start": start,
        "modules_entered": len({pkg.functions[d].module for _, d, _ in order}),
        "entries": len(order),
        "climbs": climbs,
        "returns": returns,
        "list": shown,
    }


def _run_command(pkg: Package) -> str | None:
    """The function of `monitor run`: in monitor/cli/, decorated `@app.command("run")`."""
    for name, fn in pkg.functions.items():
        for deco in fn.node.decorator_list if fn.module.startswith("monitor.cli.") else ():
            if (
                isinstance(deco, ast.Call)
                and getattr(deco.func, "attr", "") == "command"
                and deco.args
                and isinstance(deco.args[0], ast.Constant)
                and deco.args[0].value == "run"
            ):
                return name
    return None


def week_function(pkg: Package) -> dict[str, object]:
    """Measure 3."""
    current = _run_command(pkg)
    if current is None:
        return {"function": None}
    memo: dict[str, set[str]] = {}

    def stages(f: str) -> set[str]:
        if f not in memo:
            memo[f] = {pkg.part_of(g) for g in pkg.reachable([f], pkg.precise)} & set(STAGES)
        return memo[f]

    chain = [current]
    while True:
        whole = [c for c in pkg.precise[current] if c not in chain and stages(c) == set(STAGES)]
        if len(whole) != 1:
            break
        current = whole[0]
        chain.append(current)
    return {
        "function": current,
        "lines": pkg.functions[current].lines,
        "path": [_short(pkg, f) for f in chain],
        "reaches": sorted(stages(current)),
    }


CANDIDATE_SIDE = ("monitor.store.models.Candidate",)
JUDGED_SIDE = ("monitor.store.models.Assessment", "monitor.store.models.JudgeFailure")


def _sides(pkg: Package, fn: Function, one_sided: dict[str, str]) -> set[str]:
    """Which of the two sides `fn`'s body names: the models themselves, or a one-sided store function."""
    found = set()
    for node in pkg.body(fn):
        if isinstance(node, ast.Name | ast.Attribute):
            dotted = pkg.resolve(fn.module, node, fn)
            if dotted in CANDIDATE_SIDE:
                found.add("candidates")
            elif dotted in JUDGED_SIDE:
                found.add("judged")
            elif dotted in one_sided:
                found.add(one_sided[dotted])
    return found


def _leaves_out(pkg: Package, fn: Function) -> bool:
    """`fn` leaves something out: `~` (SQL's NOT), a set difference, `not in` / `.not_in(...)` /
    `.notin_(...)` / `.except_(...)`, or `if x in y: continue`."""
    for node in pkg.body(fn):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
            return True
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.NotIn) for op in node.ops):
            return True
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("not_in", "notin_", "except_"):
            return True
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Compare)
            and any(isinstance(op, ast.In) for op in node.test.ops)
            and isinstance(node.body[0], ast.Continue)
        ):
            return True
    return False


def pending_definitions(pkg: Package) -> dict[str, object]:
    """Measure 4: a function whose own body (with the private helpers of its module it calls) names
    both the candidate pairs and what is judged, failed or parked, and leaves something out (`_leaves_out`:
    the candidates that are judged, say); a store function that names one side
    stands for that side where another function calls it (`judged_keys`, `pairs_to_judge`), one that
    names both is a definition itself, and its callers that only combine definitions (a digest's
    tallies) define nothing."""

    def with_helpers(name: str) -> set[str]:
        fn = pkg.functions[name]
        helpers = {
            c
            for c in pkg.reachable([name])
            if pkg.functions[c].module == fn.module and c.rsplit(".", 1)[-1].startswith("_")
        }
        return {name} | helpers

    direct = {
        name: set().union(*(_sides(pkg, pkg.functions[f], {}) for f in with_helpers(name)))
        for name in pkg.functions
    }
    one_sided = {
        name: next(iter(sides))
        for name, sides in direct.items()
        if len(sides) == 1 and pkg.functions[name].module.startswith("monitor.store.")
    }
    found = set()
    for name in pkg.functions:
        sides = set().union(*(_sides(pkg, pkg.functions[f], one_sided) for f in with_helpers(name)))
        if sides == {"candidates", "judged"} and any(
            _leaves_out(pkg, pkg.functions[f]) for f in with_helpers(name)
        ):
            found.add(name)
    # A private helper of a definition in its own module is part of that definition.
    found = {f for f in found if not any(f in with_helpers(g) and f != g for g in found)}
    listed = []
    for name in sorted(found):
        doc = ast.get_docstring(pkg.functions[name].node) or ""
        listed.append(f"{name}: {doc.splitlines()[0][:100]}" if doc else name)
    return {"count": len(found), "modules": len({pkg.functions[f].module for f in found}), "list": listed}


def _embedded_names(pkg: Package) -> tuple[set[str], set[str]]:
    """The embedded judge's names (the values of monitor/config.py's EMBEDDED* constants) and every
    constant in the package that stands for one of them."""
    # monitor/config.py held them until issue 32 gave them monitor/judge_names.py (`_STORED`: the
    # name its rows keep).
    names: set[str] = set()
    for where in ("monitor.config", "monitor.judge_names"):
        module = pkg.modules.get(where)
        for key, value in (module.constants.items() if module else ()):
            values = value.values if key == "_STORED" and isinstance(value, ast.Dict) else [value]
            if key.startswith("EMBEDDED") or key == "_STORED":
                names |= {v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    constants: set[str] = set()
    changed = True
    while changed:
        changed = False
        for module in pkg.modules.values():
            for key, value in module.constants.items():
                dotted = f"{module.name}.{key}"
                if dotted in constants:
                    continue
                literal = (
                    isinstance(value, ast.Constant) and value.value in names and key.startswith("EMBEDDED")
                )
                alias = (
                    isinstance(value, ast.Name | ast.Attribute)
                    and pkg.resolve(module.name, value) in constants
                )
                if literal or alias:
                    constants.add(dotted)
                    changed = True
    return names, constants


def _compares_a_judge_name(
    pkg: Package, module: Module, node: ast.Compare, names: set[str], constants: set[str]
) -> bool:
    if not all(isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops):
        return False
    operands = [node.left, *node.comparators]
    for operand in operands:
        for n in ast.walk(operand):
            if isinstance(n, ast.Name | ast.Attribute) and pkg.resolve(module.name, n) in constants:
                return True

    def literal(expr: ast.expr) -> bool:
        values = expr.elts if isinstance(expr, ast.Tuple | ast.List | ast.Set) else [expr]
        return any(isinstance(v, ast.Constant) and v.value in names for v in values)

    others = " ".join(ast.unparse(o) for o in operands if not literal(o))
    return any(literal(o) for o in operands) and any(word in others for word in ("judge", "provider"))


def name_comparisons(pkg: Package) -> dict[str, object]:
    """Measure 5."""
    names, constants = _embedded_names(pkg)
    places = []
    for module in pkg.modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Compare) and _compares_a_judge_name(pkg, module, node, names, constants):
                where = module.path.relative_to(pkg.repo)
                places.append(f"{where}:{node.lineno}: {' '.join(ast.unparse(node).split())}")
    return {
        "names": sorted(names),
        "count": len(places),
        "files": len({p.split(":", 1)[0] for p in places}),
        "list": sorted(places),
    }


def layers_of(repo: Path) -> dict[str, int]:
    """The layers tests/test_architecture.py declares (a literal dict named LAYERS)."""
    tree = ast.parse((repo / "tests" / "test_architecture.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "LAYERS"
        ):
            return ast.literal_eval(node.value) if node.value is not None else {}
    return {}


def measure(repo: Path) -> dict[str, object]:
    pkg = Package(repo)
    return {
        "repo": str(repo),
        "pair_modules": pair_modules(pkg),
        "settings": settings_reads(pkg, layers_of(repo)),
        "settings_or_a_section": settings_reads(pkg, layers_of(repo), sections=True),
        "week_function": week_function(pkg),
        "pending_definitions": pending_definitions(pkg),
        "judge_name_comparisons": name_comparisons(pkg),
    }


def _print(result: dict[str, Any]) -> None:
    pair, week = result["pair_modules"], result["week_function"]
    pending, names = result["pending_definitions"], result["judge_name_comparisons"]
    print(
        f"1. modules a pair passes, candidate to stored assessment: {pair['modules']} on the way, "
        f"{pair['with_round_trips']} with its round trips"
    )
    for module, functions in pair["functions"].items():
        print(f"     {module}: {', '.join(functions)}")
    for module, functions in pair["round_trips"].items():
        print(f"     (round trip) {module}: {', '.join(functions)}")
    kinds = (("settings", "a Settings"), ("settings_or_a_section", "a Settings or a section of it"))
    for key, what in kinds:
        settings = result[key]
        print(
            f"2. {what}: taken or read in {settings['modules_taking_or_reading']} modules "
            f"({settings['functions_taking']} functions take it, {settings['functions_reading']} read it); "
            f"handed to another module {settings['entries']} times, into {settings['modules_entered']} "
            "modules"
        )
        carried = settings.get("from")
        if carried:
            print(
                f"   from {carried['start']}: enters {carried['modules_entered']} modules "
                f"{carried['entries']} times, climbs {carried['climbs']}, returns {carried['returns']}"
            )
            for line in carried["list"]:
                print(f"     {line}")
    print(f"3. the function that runs a week: {week['function']}, {week.get('lines')} lines")
    print(f"     from the run command: {' -> '.join(week.get('path', []))}")
    print(f"4. definitions of pending: {pending['count']} in {pending['modules']} modules")
    for name in pending["list"]:
        print(f"     {name}")
    print(
        f"5. comparisons with the embedded judge's names {names['names']}: {names['count']} in "
        f"{names['files']} files"
    )
    for place in names["list"]:
        print(f"     {place}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="a checkout (default: this one)")
    parser.add_argument("--json", action="store_true", help="everything, lists included, as JSON")
    args = parser.parse_args()
    result = measure(args.repo.resolve())
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print(result)


if __name__ == "__main__":
    main()

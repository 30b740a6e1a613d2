"""The interpreter behind `program_output`: it walks the syntax tree of an answer program
statement by statement, never running it, with its steps, call depth and work bounded. (What
it reads, and why, is described in `_program_output.py`.)"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from typing import Any

from maps_autogen.benchmarks.mathvista._program_builtins import (
    BUILTIN_KEYWORDS,
    BUILTINS,
    COMPARE,
    COMPARISONS_PER_KEY,
    MAX_LENGTH,
    binary,
    bounded_join,
    checked,
    copied,
    number_set,
    printed_text,
    sized,
)
from maps_autogen.benchmarks.mathvista._program_names import (
    MODULE_FUNCTIONS,
    MUTATING_METHODS,
    OPAQUE_MODULES,
    PRINTING,
    REFUSED_NAMES,
    BoundMethod,
    Lambda,
    Module,
    method_names_of,
    show_window,
)
from maps_autogen.benchmarks.mathvista._program_values import (
    UNKNOWN,
    Unsupported,
    charge,
    touch,
)
from maps_autogen.benchmarks.mathvista._program_values import is_unknown as _is_unknown

# Interpreter steps (statements and expressions walked); what one step does to values is
# charged to program_values' work budget by its real cost.
MAX_STEPS = 20_000
MAX_CALL_DEPTH = 30


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass



_FORMAT_SPEC = re.compile(r"[<>^]?[+-]?,?\d{0,2}(?:\.\d{1,2})?[fdeg%]?")


class _Interpreter:
    """Walks one program; `output` collects what `print` would write."""

    def __init__(self) -> None:
        self.steps = 0
        self.depth = 0
        self.output: list[str] = []
        self.printed = 0  # characters in `output`
        self.globals: dict[str, Any] = {}

    # -- statements ---------------------------------------------------------------------------

    def tick(self, cost: int = 1) -> None:
        self.steps += cost
        if self.steps > MAX_STEPS:
            raise Unsupported("too many steps")

    def run_block(self, body: Iterable[ast.stmt], scope: dict[str, Any]) -> None:
        for statement in body:
            self.run(statement, scope)

    def run(self, node: ast.stmt, scope: dict[str, Any]) -> None:
        """Run one statement; a kind of statement outside the subset is Unsupported."""
        self.tick()
        handler = _STATEMENTS.get(type(node))
        if handler is None:
            raise Unsupported(type(node).__name__)
        handler(self, node, scope)

    def run_expr(self, node: ast.Expr, scope: dict[str, Any]) -> None:
        self.eval(node.value, scope)

    def run_assign(self, node: ast.Assign, scope: dict[str, Any]) -> None:
        value = self.eval(node.value, scope)
        for target in node.targets:
            self.assign(target, value, scope)

    def run_aug_assign(self, node: ast.AugAssign, scope: dict[str, Any]) -> None:
        current = self.eval(_as_load(node.target), scope)
        self.assign(node.target, checked(binary(node.op, current, self.eval(node.value, scope))), scope)

    def run_ann_assign(self, node: ast.AnnAssign, scope: dict[str, Any]) -> None:
        if node.value is None:
            raise Unsupported(type(node).__name__)
        self.assign(node.target, self.eval(node.value, scope), scope)

    def run_if(self, node: ast.If, scope: dict[str, Any]) -> None:
        self.run_block(node.body if self.decide(node.test, scope) else node.orelse, scope)

    def run_while(self, node: ast.While, scope: dict[str, Any]) -> None:
        while self.decide(node.test, scope):
            self.tick()
            try:
                self.run_block(node.body, scope)
            except _Break:
                break
            except _Continue:
                continue

    def run_function_def(self, node: ast.FunctionDef, scope: dict[str, Any]) -> None:
        if node.decorator_list:
            raise Unsupported(type(node).__name__)
        scope[node.name] = node

    def run_return(self, node: ast.Return, scope: dict[str, Any]) -> None:
        raise _Return(None if node.value is None else self.eval(node.value, scope))

    def run_import(self, node: ast.Import, scope: dict[str, Any]) -> None:
        for alias in node.names:
            scope[alias.asname or alias.name.split(".")[0]] = Module(alias.name)

    def run_import_from(self, node: ast.ImportFrom, scope: dict[str, Any]) -> None:
        module = node.module
        if module is None or node.level or (module != "math" and module.split(".")[0] not in OPAQUE_MODULES):
            raise Unsupported(type(node).__name__)
        for alias in node.names:
            scope[alias.asname or alias.name] = Module(module).attribute(alias.name)

    def run_break(self, node: ast.Break, scope: dict[str, Any]) -> None:
        raise _Break()

    def run_continue(self, node: ast.Continue, scope: dict[str, Any]) -> None:
        raise _Continue()

    def run_pass(self, node: ast.Pass, scope: dict[str, Any]) -> None:
        return None

    def decide(self, test: ast.expr, scope: dict[str, Any]) -> bool:
        """The truth of a branch or loop condition; an unknown one leaves the subset."""
        value = self.eval(test, scope)
        if _is_unknown(value):
            raise Unsupported("condition on an unknown value")
        return bool(value)

    def run_for(self, node: ast.For, scope: dict[str, Any]) -> None:
        items = self.eval(node.iter, scope)
        for item in sized(items):
            self.tick()
            self.assign(node.target, item, scope)
            try:
                self.run_block(node.body, scope)
            except _Break:
                return
            except _Continue:
                continue
        self.run_block(node.orelse, scope)

    def assign(self, target: ast.expr, value: Any, scope: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not _is_unknown(value):
                charge(len(sized(value)))
            values = [UNKNOWN] * len(target.elts) if _is_unknown(value) else list(value)
            if len(values) != len(target.elts):
                raise Unsupported("unpacking")
            for element, item in zip(target.elts, values):
                self.assign(element, item, scope)
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value, scope)
            if _is_unknown(container):
                return  # an item of an unknown value: it stays unknown
            if not isinstance(container, (list, dict)):
                raise Unsupported("item assignment")
            index = self.eval(target.slice, scope)
            touch(index)  # a dict hashes it
            container[index] = value
            checked(container)
        else:
            raise Unsupported("assignment target")

    # -- expressions --------------------------------------------------------------------------

    def eval(self, node: ast.expr, scope: dict[str, Any]) -> Any:
        self.tick()
        return checked(self._eval(node, scope))

    def _eval(self, node: ast.expr, scope: dict[str, Any]) -> Any:
        handler = _EXPRESSIONS.get(type(node))
        if handler is None:
            raise Unsupported(type(node).__name__)
        return handler(self, node, scope)

    def eval_constant(self, node: ast.Constant, scope: dict[str, Any]) -> Any:
        if isinstance(node.value, (int, float, str, bool, type(None))):
            return node.value
        raise Unsupported("constant")

    def eval_name(self, node: ast.Name, scope: dict[str, Any]) -> Any:
        if node.id in scope:
            return scope[node.id]
        if node.id in BUILTINS or node.id == "print":
            return node.id
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        if node.id in REFUSED_NAMES or PRINTING.search(node.id):
            # A function of its own that would show the answer ("print_result(x)").
            raise Unsupported(f"name {node.id}")
        return UNKNOWN  # a name the program never defines

    def eval_bin_op(self, node: ast.BinOp, scope: dict[str, Any]) -> Any:
        left, right = self.eval(node.left, scope), self.eval(node.right, scope)
        return UNKNOWN if _is_unknown(left, right) else binary(node.op, left, right)

    def eval_unary_op(self, node: ast.UnaryOp, scope: dict[str, Any]) -> Any:
        operand = self.eval(node.operand, scope)
        if _is_unknown(operand):
            return UNKNOWN
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return +operand
        if isinstance(node.op, ast.Not):
            return not operand
        raise Unsupported("unary operator")

    def eval_bool_op(self, node: ast.BoolOp, scope: dict[str, Any]) -> Any:
        result: Any = None
        for value in node.values:
            result = self.eval(value, scope)
            if _is_unknown(result):
                return UNKNOWN
            if isinstance(node.op, ast.And) and not result:
                return result
            if isinstance(node.op, ast.Or) and result:
                return result
        return result

    def eval_compare(self, node: ast.Compare, scope: dict[str, Any]) -> Any:
        left = self.eval(node.left, scope)
        for operator, comparator in zip(node.ops, node.comparators):
            right = self.eval(comparator, scope)
            if _is_unknown(left, right):
                return UNKNOWN
            if isinstance(operator, (ast.In, ast.NotIn)) and isinstance(right, (dict, set)):
                touch(left, times=2)  # hashed, then compared with the key found
            elif not isinstance(operator, (ast.Is, ast.IsNot)):
                touch(left, right)  # a comparison or a scan may walk both sides whole
            if not COMPARE[type(operator)](left, right):
                return False
            left = right
        return True

    def eval_if_exp(self, node: ast.IfExp, scope: dict[str, Any]) -> Any:
        return self.eval(node.body if self.decide(node.test, scope) else node.orelse, scope)

    def eval_sequence(self, node: ast.List | ast.Tuple | ast.Set, scope: dict[str, Any]) -> Any:
        items = [self.eval(element, scope) for element in node.elts]
        return _SEQUENCE_TYPES[type(node)](items)

    def eval_dict(self, node: ast.Dict, scope: dict[str, Any]) -> Any:
        keys = []
        for key in node.keys:
            if key is None:
                raise Unsupported("dict unpacking")
            keys.append(key)
        values = [self.eval(key, scope) for key in keys]
        if _is_unknown(*values):
            return UNKNOWN
        touch(*values)  # hashed
        return dict(zip(values, (self.eval(value, scope) for value in node.values)))

    def eval_subscript(self, node: ast.Subscript, scope: dict[str, Any]) -> Any:
        container = self.eval(node.value, scope)
        if isinstance(node.slice, ast.Slice):
            parts = [None if part is None else self.eval(part, scope)
                     for part in (node.slice.lower, node.slice.upper, node.slice.step)]
            if _is_unknown(container, *parts):
                return UNKNOWN
            charge(copied(sized(container)))
            return container[slice(*parts)]
        index = self.eval(node.slice, scope)
        if _is_unknown(container, index):
            return UNKNOWN
        touch(index)  # a dict hashes it
        return sized(container)[index]

    def eval_attribute(self, node: ast.Attribute, scope: dict[str, Any]) -> Any:
        owner = self.eval(node.value, scope)
        if isinstance(owner, Module):
            return owner.attribute(node.attr)
        if _is_unknown(owner):
            return UNKNOWN
        if node.attr in method_names_of(owner) and node.attr not in MUTATING_METHODS:
            return BoundMethod(owner, node.attr)  # "key=prices.get"
        if isinstance(owner, (int, float, str, list, tuple, dict, set)) and not hasattr(owner, node.attr):
            # Python fails here too ("stone.shape" on a dict): an AttributeError.
            raise AttributeError(node.attr)
        raise Unsupported("attribute")

    def eval_lambda(self, node: ast.Lambda, scope: dict[str, Any]) -> Any:
        return Lambda(node, scope)

    def eval_comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp, scope: dict[str, Any]) -> Any:
        items = self.comprehension(node.elt, node.generators, scope)
        return number_set(items) if isinstance(node, ast.SetComp) else items

    def eval_joined_str(self, node: ast.JoinedStr, scope: dict[str, Any]) -> Any:
        return "".join(self.formatted(part, scope) for part in node.values)

    def formatted(self, part: ast.expr, scope: dict[str, Any]) -> str:
        if isinstance(part, ast.Constant):
            return str(part.value)
        if not isinstance(part, ast.FormattedValue):
            raise Unsupported("f-string part")
        value = self.eval(part.value, scope)
        if _is_unknown(value):
            raise Unsupported("unknown value in an f-string")
        spec = "" if part.format_spec is None else self.formatted_spec(part.format_spec, scope)
        if not _FORMAT_SPEC.fullmatch(spec):
            raise Unsupported("format spec")
        if part.conversion == ord("r"):
            value = repr(printed_text(value))
        elif isinstance(value, (list, tuple, set, dict)):
            value = printed_text(value)
        touch(value)
        text: str = checked(format(value, spec))
        return text

    def formatted_spec(self, spec: ast.expr, scope: dict[str, Any]) -> str:
        if isinstance(spec, ast.JoinedStr) and all(isinstance(part, ast.Constant) for part in spec.values):
            return "".join(str(part.value) for part in spec.values)  # type: ignore[attr-defined]
        raise Unsupported("computed format spec")

    def comprehension(self, element: ast.expr, generators: list[ast.comprehension],
                      scope: dict[str, Any]) -> list[Any]:
        results: list[Any] = []
        inner = dict(scope)

        def expand(level: int) -> None:
            if level == len(generators):
                results.append(self.eval(element, inner))
                if len(results) > MAX_LENGTH:
                    raise Unsupported("comprehension too long")
                return
            generator = generators[level]
            items = self.eval(generator.iter, inner)
            if _is_unknown(items):
                raise Unsupported("loop over an unknown value")
            for item in sized(items):
                self.tick()
                self.assign(generator.target, item, inner)
                if all(self.decide(condition, inner) for condition in generator.ifs):
                    expand(level + 1)

        expand(0)
        return results

    def call(self, node: ast.Call, scope: dict[str, Any]) -> Any:
        if any(isinstance(arg, ast.Starred) for arg in node.args) or \
                any(keyword.arg is None for keyword in node.keywords):
            raise Unsupported("starred arguments")
        if isinstance(node.func, ast.Attribute):
            owner = self.eval(node.func.value, scope)
            args = [self.eval(arg, scope) for arg in node.args]
            keywords = self.keyword_values(node, scope)
            if isinstance(owner, Module):
                return self.apply(owner.attribute(node.func.attr), args, keywords)
            if _is_unknown(owner):
                return UNKNOWN
            if keywords:
                raise Unsupported("keyword arguments")
            return self.method(owner, node.func.attr, args)
        function = self.eval(node.func, scope)
        args = [self.eval(arg, scope) for arg in node.args]
        keywords = self.keyword_values(node, scope)
        return self.apply(function, args, keywords)

    def keyword_values(self, node: ast.Call, scope: dict[str, Any]) -> dict[str, Any]:
        """The call's `name=value` arguments, evaluated (`**mapping` is refused before this)."""
        return {keyword.arg: self.eval(keyword.value, scope) for keyword in node.keywords if keyword.arg is not None}

    def apply(self, function: Any, args: list[Any], keywords: dict[str, Any]) -> Any:
        """Call a function value: a builtin, math, a method, a user function or lambda."""
        if isinstance(function, str) and function == "print":
            if _is_unknown(*args, *keywords.values()):
                raise Unsupported("printing an unknown value")
            return self.print(args, keywords)
        if isinstance(function, (ast.FunctionDef, Lambda)):
            if keywords:
                raise Unsupported("keyword arguments")
            return self.call_function(function, args)
        if _is_unknown(function, *args, *keywords.values()):
            return UNKNOWN
        if isinstance(function, BoundMethod):
            if keywords:
                raise Unsupported("keyword arguments")
            return self.method(function.owner, function.name, args)
        if isinstance(function, str) and function in BUILTINS:
            if set(keywords) - BUILTIN_KEYWORDS.get(function, set()):
                raise Unsupported("keyword arguments")
            if "key" in keywords and keywords["key"] is not None:
                keywords["key"] = self.key_function(keywords["key"])
            return BUILTINS[function](*args, **keywords)
        if callable(function) and function in MODULE_FUNCTIONS:
            if keywords and function is not show_window:
                raise Unsupported("keyword arguments")
            return function(*args, **keywords)
        raise Unsupported("call")

    def key_function(self, function: Any) -> Callable[[Any], Any]:
        """A `key=` argument as a Python function; an unknown key leaves the subset."""

        def key(item: Any) -> Any:
            self.tick()
            value = self.apply(function, [item], {})
            if _is_unknown(value):
                raise Unsupported("unknown sort key")
            touch(value, times=COMPARISONS_PER_KEY)  # compared about 2·log2(n) times
            return value

        return key

    def method(self, owner: Any, name: str, args: list[Any]) -> Any:
        if name not in method_names_of(owner):
            raise Unsupported(f"method {name}")
        if _is_unknown(*args):
            if name in MUTATING_METHODS and name != "append":
                raise Unsupported("an unknown value changes a container")
            if name != "append":
                return UNKNOWN
        if isinstance(owner, str) and name == "join":
            return bounded_join(owner, *args)
        if isinstance(owner, set) and not all(isinstance(arg, (int, float)) for arg in args):
            raise Unsupported("set of non-numbers (no fixed order)")
        self.charge_method(owner, name, args)
        result = getattr(owner, name)(*args)
        checked(owner)
        return list(result) if name in ("keys", "values", "items") else result

    @staticmethod
    def charge_method(owner: Any, name: str, args: list[Any]) -> None:
        """Charge a method call by what it touches, before it runs."""
        if name == "sort":
            rounds = 2 * max(len(owner), 1).bit_length()
            touch(owner, times=rounds)
        elif isinstance(owner, (list, tuple)) and name in ("index", "count", "remove"):
            touch(owner, *args)  # compares the argument with the elements
        elif isinstance(owner, (dict, set)) and name in ("get", "pop", "add"):
            touch(*args[:1], times=2)  # hashed, then compared with the key found
        elif isinstance(owner, str):
            touch(owner, *args)
        elif name in ("append", "insert", "pop"):
            charge(1)  # an element put or taken (a shift of the rest is a cheap memory move)
        else:
            charge(copied(owner) + sum(copied(arg) for arg in args))

    def call_function(self, function: ast.FunctionDef | Lambda, args: list[Any]) -> Any:
        if isinstance(function, Lambda):
            return self.call_lambda(function, args)
        parameters = function.args
        if parameters.vararg or parameters.kwarg or parameters.kwonlyargs or parameters.posonlyargs:
            raise Unsupported("parameters")
        names = [arg.arg for arg in parameters.args]
        defaults = [self.eval(default, self.globals) for default in parameters.defaults]
        values = args + defaults[len(defaults) - (len(names) - len(args)):] if len(args) < len(names) else args
        if len(values) != len(names):
            raise Unsupported("arguments")
        self.depth += 1
        if self.depth > MAX_CALL_DEPTH:
            raise Unsupported("recursion")
        local = {**self.globals, **dict(zip(names, values))}
        try:
            self.run_block(function.body, local)
        except _Return as returned:
            return returned.value
        finally:
            self.depth -= 1
        return None

    def call_lambda(self, function: Lambda, args: list[Any]) -> Any:
        parameters = function.node.args
        if parameters.vararg or parameters.kwarg or parameters.kwonlyargs or parameters.posonlyargs \
                or parameters.defaults or len(parameters.args) != len(args):
            raise Unsupported("lambda arguments")
        self.depth += 1
        try:
            if self.depth > MAX_CALL_DEPTH:
                raise Unsupported("recursion")
            local = {**function.scope, **{arg.arg: value for arg, value in zip(parameters.args, args)}}
            return self.eval(function.node.body, local)
        finally:
            self.depth -= 1

    def print(self, args: list[Any], keywords: dict[str, Any]) -> None:
        if set(keywords) - {"sep", "end"}:
            raise Unsupported("print keywords")
        separator, end = keywords.get("sep"), keywords.get("end")
        separator = " " if separator is None else separator
        end = "\n" if end is None else end
        if not isinstance(separator, str) or not isinstance(end, str):
            raise TypeError("sep and end must be None or a string")  # as Python fails
        if len(separator) * len(args) + len(end) + self.printed > MAX_LENGTH:
            raise Unsupported("too much output")
        text = separator.join(printed_text(arg) for arg in args) + end
        self.printed += len(text)
        if self.printed > MAX_LENGTH:
            raise Unsupported("too much output")
        self.output.append(text)
        return None


# What each kind of statement and expression runs (a kind not listed is outside the subset).
_STATEMENTS: dict[type[ast.stmt], Callable[[_Interpreter, Any, dict[str, Any]], None]] = {
    ast.Expr: _Interpreter.run_expr, ast.Assign: _Interpreter.run_assign,
    ast.AugAssign: _Interpreter.run_aug_assign, ast.AnnAssign: _Interpreter.run_ann_assign,
    ast.If: _Interpreter.run_if, ast.For: _Interpreter.run_for, ast.While: _Interpreter.run_while,
    ast.FunctionDef: _Interpreter.run_function_def,
    ast.Return: _Interpreter.run_return,
    ast.Import: _Interpreter.run_import,
    ast.ImportFrom: _Interpreter.run_import_from,
    ast.Break: _Interpreter.run_break,
    ast.Continue: _Interpreter.run_continue,
    ast.Pass: _Interpreter.run_pass,
}
_EXPRESSIONS: dict[type[ast.expr], Callable[[_Interpreter, Any, dict[str, Any]], Any]] = {
    ast.Constant: _Interpreter.eval_constant,
    ast.Name: _Interpreter.eval_name,
    ast.BinOp: _Interpreter.eval_bin_op, ast.UnaryOp: _Interpreter.eval_unary_op,
    ast.BoolOp: _Interpreter.eval_bool_op, ast.Compare: _Interpreter.eval_compare,
    ast.IfExp: _Interpreter.eval_if_exp,
    ast.List: _Interpreter.eval_sequence, ast.Tuple: _Interpreter.eval_sequence, ast.Set: _Interpreter.eval_sequence,
    ast.Dict: _Interpreter.eval_dict, ast.Subscript: _Interpreter.eval_subscript,
    ast.Attribute: _Interpreter.eval_attribute,
    ast.Lambda: _Interpreter.eval_lambda,
    ast.Call: _Interpreter.call,
    ast.ListComp: _Interpreter.eval_comprehension, ast.GeneratorExp: _Interpreter.eval_comprehension,
    ast.SetComp: _Interpreter.eval_comprehension,
    ast.JoinedStr: _Interpreter.eval_joined_str,
}
_SEQUENCE_TYPES: dict[type[ast.expr], Callable[[list[Any]], Any]] = {
    ast.List: list, ast.Tuple: tuple, ast.Set: number_set,
}


def _as_load(target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Name):
        return ast.Name(id=target.id, ctx=ast.Load())
    if isinstance(target, ast.Subscript):
        return ast.Subscript(value=target.value, slice=target.slice, ctx=ast.Load())
    raise Unsupported("augmented target")

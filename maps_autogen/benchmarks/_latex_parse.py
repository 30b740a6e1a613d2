"""sympy's LaTeX parser as the symbolic judges call it, memoised, with what they need of it: the
official parse (`parse_latex`), found first with ANTLR's faster SLL prediction, and a parse that
must read the whole text (`parse_latex_whole`, EMMA's: latex2sympy2 reads a number to its end, so
"35." is 35, never the 3 that sympy's grammar stops at). Runs in the symbolic helper process
(`_symbolic`)."""

from __future__ import annotations

import collections
import functools
import importlib
from typing import Any


class _ParseFailure:
    """Marker cached for LaTeX that does not parse, so repeated failures are cheap too."""

    def __init__(self, error: Exception) -> None:
        self.error = error


# How each text was parsed, by path: "sll" (the fast prediction mode settled it) or "ll" (the
# official parse ran). Read by the tests and perf scripts; per process.
parse_paths: collections.Counter[str] = collections.Counter()


class _NotSettled(Exception):
    """The fast parse cannot stand for the official one (see `_parse_fast`)."""


def _parsed(text: str, *, sll: bool) -> tuple[Any, Any, bool]:
    """sympy's LaTeX grammar run on `text` as sympy's `parse_latex` runs it (its lexer, parser and
    error listener), with SLL or the default LL prediction: sympy's converter module, the
    relation's tree, and whether the parse read every token. Raises on a syntax error."""
    import antlr4
    from antlr4.atn.PredictionMode import PredictionMode

    # The module binds its parser classes to None until antlr4 imports: untyped here.
    latex_antlr: Any = importlib.import_module("sympy.parsing.latex._parse_latex_antlr")
    listener = latex_antlr.MathErrorListener(text)
    lexer = latex_antlr.LaTeXLexer(antlr4.InputStream(text))
    lexer.removeErrorListeners()
    lexer.addErrorListener(listener)
    tokens = antlr4.CommonTokenStream(lexer)
    parser = latex_antlr.LaTeXParser(tokens)
    parser.removeErrorListeners()
    parser.addErrorListener(listener)
    parser._interp.predictionMode = PredictionMode.SLL if sll else PredictionMode.LL
    relation = parser.math().relation()
    return latex_antlr, relation, tokens.LA(1) == antlr4.Token.EOF


def _parse_fast(text: str) -> Any:
    """sympy's LaTeX parse of `text` with ANTLR's SLL prediction instead of the default LL.

    The official judges call sympy's `parse_latex`, whose ANTLR parser predicts with full
    context (LL): on prose or a long formula that costs milliseconds per token (a 1 KB answer
    takes seconds, more than the time limit on a loaded machine). SLL prediction caches its
    decisions and is several times faster; ANTLR guarantees it either builds the very tree LL
    builds or reports a syntax error. sympy's grammar does not require the input to end where
    the parse ends, so a parse that stops before the last token could differ from LL's: that
    case, like any syntax error, raises _NotSettled and the caller runs the official parse.
    The tree is converted by sympy's own converter, as in the official parse.
    """
    try:
        latex_antlr, relation, whole = _parsed(text, sll=True)
    except Exception as exc:  # a syntax error, or anything else: not settled
        raise _NotSettled() from exc
    if not whole:
        raise _NotSettled()
    return latex_antlr.convert_relation(relation)


@functools.lru_cache(maxsize=8192)
def _parse_cached(text: str) -> Any:
    from sympy.parsing.latex import parse_latex as sympy_parse_latex

    try:
        try:
            result = _parse_fast(text)
            parse_paths["sll"] += 1
            return result
        except _NotSettled:
            parse_paths["ll"] += 1
            return sympy_parse_latex(text)
    except Exception as exc:  # noqa: BLE001 - re-raised by parse_latex below
        return _ParseFailure(exc)


def parse_latex(text: str) -> Any:
    """sympy's ANTLR LaTeX parser, memoised; raises what the parser raises. What it builds is
    the official parse's, found first with the faster SLL prediction (see `_parse_fast`).

    sympy expressions are immutable, so sharing one parsed object between callers is safe.
    """
    result = _parse_cached(text)
    if isinstance(result, _ParseFailure):
        # Drop the old traceback: re-raising one cached object would otherwise keep growing it.
        raise result.error.with_traceback(None)
    return result


class StopsEarly(ValueError):
    """The LaTeX parse ends before the end of the text (`parse_latex_whole`)."""


@functools.lru_cache(maxsize=8192)
def _whole_cached(text: str) -> Any:
    try:
        try:
            result = _parse_fast(text)  # read to the end: the tree LL builds
            parse_paths["sll"] += 1
            return result
        except _NotSettled:
            parse_paths["ll"] += 1
            latex_antlr, relation, whole = _parsed(text, sll=False)
            if not whole:
                raise StopsEarly(f"the LaTeX parse of {text[:60]!r} stops before its end") from None
            return latex_antlr.convert_relation(relation)
    except Exception as exc:  # noqa: BLE001 - re-raised by parse_latex_whole below
        return _ParseFailure(exc)


def parse_latex_whole(text: str) -> Any:
    """`parse_latex`, only when the parse reads the whole text: sympy's grammar stops at the
    first token it cannot use and returns what it read ("35." is 3, "7^{4}.5" is 7^4), where
    latex2sympy2's reads a number to its end or goes on with the rest (EMMA). Raises
    StopsEarly when the parse ends before the text does, else what the parser raises."""
    result = _whole_cached(text)
    if isinstance(result, _ParseFailure):
        raise result.error.with_traceback(None)
    return result


__all__ = ["StopsEarly", "parse_latex", "parse_latex_whole", "parse_paths"]

"""How the custom benchmark reads a number from an answer: as a grader reads it, never a stray
digit (docs/benchmarks.md has the phrasing set the rules are measured on).

The answer's number is its last number written as a whole: digits with a sign, a decimal part,
thousands separators ("1,250", "1{,}250", "1\\,250", "1 250" with a thin space) and a power of
ten ("3e8", "3 \\times 10^{8}", "3·10^8", "3 x 10^8", "3×10⁸"); LaTeX fractions (`\\frac`,
`\\dfrac`, `\\tfrac`, also `\\frac12`), roots (`\\sqrt{…}`, `\\sqrt[3]{…}`, "√3"), `\\pi`,
powers, products, sums and parentheses of those; mixed numbers ("1\\frac{1}{2}", "1 1/2", "1½");
a "%" (or "percent") after it. It is evaluated: exactly (as a fraction) when it can be, else to
34 significant digits (a root that is not exact, π). Units and words around it are left aside
("4 kg", "v = 3 \\times 10^{8} m/s", "m/s^2", "30^\\circ"); so are digits that belong to a word
("H_2O", "x_1", "CO2", the 2 of "m^2").

An answer is unreadable (never credited) when its last number cannot be evaluated or is not
one number: a LaTeX form holding a variable (`\\frac{x}{4}`, `\\sqrt{2g}`), a number that is the
coefficient of a variable or part of an expression with one ("2x", "2\\theta", "x + 2",
"2/x"), a list or range ("2, 3", "2 or 3", "5 \\pm 0.1", "2 3"), a decimal comma ("12,5": a
decimal or a list?), a division by zero, the even root of a negative number. Nothing is read
from the middle of a LaTeX form: the 4 of `\\frac{1}{4}` is never the answer.

Every step is linear in the text: one pass normalises it, one pass makes tokens, and the
tokens are parsed left to right, a failed number skipped whole (to the end of the LaTeX forms
and brackets it entered; a bracket that starts no number is read again from inside once, and
the brackets around it are not tried again); nesting is bounded (`MAX_NESTING`), and every
exact result is charged against the number bounds (`bounds`) before it is computed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from maps_autogen.benchmarks._bounds import exact_number
from maps_autogen.benchmarks.custom._number_tokens import Token, closings, tokens_of
from maps_autogen.benchmarks.custom._number_values import (
    CONTEXT,
    PI,
    Number,
    Unreadable,
    approximate,
    arithmetic,
    power,
    root,
    shown,
)

#: How close a value that is not exact (a root, π) must be to the other side, relative to the
#: larger of the two, when the record gives no wider tolerance.
RELATIVE_TOLERANCE = Decimal("1e-9")
#: Brackets and LaTeX groups nested deeper than this make a number unreadable.
MAX_NESTING = 50

_OPERAND_COMMANDS = {"frac", "sqrt", "surd", "pi"}
_PRODUCTS = {"times", "cdot", "div", "ast"}
# Commands that name a variable or a function: a number before one is a coefficient, not the answer.
_VARIABLE_COMMANDS = {"alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta",
                      "iota", "kappa", "lambda", "nu", "xi", "rho", "sigma", "tau", "phi", "varphi", "chi", "psi",
                      "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Sigma", "Phi", "Psi", "sin", "cos",
                      "tan", "cot", "sec", "csc", "log", "ln", "exp", "arcsin", "arccos", "arctan", "sinh", "cosh",
                      "tanh", "infty", "cdots", "ldots", "dots"}
_VARIABLE_LETTERS = set("xyzn")  # "2x", "3n": a coefficient (other letters are read as units: "5m", "3s")
_JOINERS = {",", ";", ":", "and", "or", "to", "pm", "mp"}  # "2, 3", "2 or 3", "5 \pm 0.1", "1:2": not one number


@dataclass(frozen=True)
class Reading:
    """What an answer says as a number: its value (None when it says none or cannot be read),
    whether a "%" followed it, and why it is unreadable (None when it was read or holds no
    number at all)."""

    value: Number | None
    percent: bool = False
    unreadable: str | None = None

    @property
    def text(self) -> str | None:
        """The value for display (`number_values.shown`), with its "%"."""
        return None if self.value is None else shown(self.value) + ("%" if self.percent else "")


# --------------------------------------------------------------------------------------------
# Tokens to a value
# --------------------------------------------------------------------------------------------


class _Parser:
    """A recursive-descent reader of one number at a time over the tokens. It decides whether
    to go on with one token of look-ahead; once it has gone on, a failure makes the number
    unreadable (`Unreadable`) and is skipped whole, so no token is read twice by one number."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.closing = closings(tokens)
        self.position = 0
        self.depth = 0  # brackets and LaTeX groups open
        self.reach = 0  # the last token of the LaTeX forms and brackets entered (an unreadable number ends there)

    def start(self, index: int) -> None:
        """Read the next number from `index` on."""
        self.position, self.depth, self.reach = index, 0, index

    def peek(self, ahead: int = 0) -> Token | None:
        index = self.position + ahead
        return self.tokens[index] if index < len(self.tokens) else None

    def is_operand(self, ahead: int, signed: bool = True) -> bool:
        """Whether a number can start `ahead` tokens from here (after a sign, when `signed`)."""
        token = self.peek(ahead)
        if token is None:
            return False
        if token.kind == "num" or (token.kind == "cmd" and token.text in _OPERAND_COMMANDS):
            return True
        if token.kind == "sym" and token.text in "({":
            return True
        return signed and token.kind == "sym" and token.text in "+-" and self.is_operand(ahead + 1, signed=False)

    def take(self) -> Token:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def resume(self) -> int:
        """Where reading goes on after an unreadable number: past every form and bracket it entered."""
        return max(self.position, self.reach) + 1

    def _argument_end(self, index: int) -> int:
        """The last token of the LaTeX argument starting at `index`."""
        if index < len(self.tokens) and self.tokens[index].text in "{[":
            return self.closing.get(index, len(self.tokens) - 1)
        return index

    # expression := term (("+" | "-") term)*
    def expression(self) -> Number:
        value = self.signed_term()
        while (token := self.peek()) is not None and token.kind == "sym" and token.text in "+-" \
                and self.is_operand(1):
            self.take()
            value = arithmetic(token.text, value, self.signed_term())
        return value

    def signed_term(self) -> Number:
        return self._signed(self.term)

    def signed_factor(self) -> Number:
        return self._signed(self.factor)

    def _signed(self, read: Callable[[], Number]) -> Number:
        negative = False
        while (token := self.peek()) is not None and token.kind == "sym" and token.text in "+-":
            self.take()
            negative ^= token.text == "-"
        value = read()
        return arithmetic("-", Fraction(0), value) if negative else value

    def _product(self) -> str | None:
        """The operator of a product or quotient here ("x" only as in "3 x 10^8")."""
        token = self.peek()
        if token is None:
            return None
        if token.kind == "sym" and token.text in "*/":
            return token.text
        if token.kind == "cmd" and token.text in _PRODUCTS:
            return "/" if token.text == "div" else "*"
        ten, hat = self.peek(1), self.peek(2)
        if token.kind == "word" and token.text in ("x", "X") and ten is not None and ten.text == "10" \
                and hat is not None and hat.text == "^":
            return "*"
        return None

    # term := factor (("*" | "/" | "\times" | "\cdot" | "\div") factor | factor-by-juxtaposition)*
    def term(self) -> Number:
        start, first = self.position, self.peek()
        value = self.factor()
        # a whole number written alone, which a proper fraction after it makes a mixed number
        whole = first is not None and first.kind == "num" and self.position == start + 1 \
            and isinstance(value, Fraction) and value.denominator == 1
        while (token := self.peek()) is not None:
            operator = self._product()
            if operator is not None and self.is_operand(1):
                self.take()
                value = arithmetic(operator, value, self.signed_factor())
            elif (token.kind == "cmd" and token.text in _OPERAND_COMMANDS) or (token.text == "(" and not token.spaced):
                mixed = whole and token.text == "frac"
                part = self.factor()
                proper = mixed and isinstance(part, Fraction) and 0 < part < 1
                value = arithmetic("+" if proper else "*", value, part)  # "1\frac{1}{2}", "2\sqrt{3}"
            elif whole and token.kind == "num" and token.spaced and self._plain_fraction():
                top, _, bottom = self.take(), self.take(), self.take()  # "1 1/2"
                value = arithmetic("+", value, arithmetic("/", self._number(top), self._number(bottom)))
            else:
                return value
            whole = False
        return value

    def _plain_fraction(self) -> bool:
        """Whether a proper fraction of two plain integers follows ("1/2" of "1 1/2")."""
        top, slash, bottom = self.peek(), self.peek(1), self.peek(2)
        if top is None or slash is None or bottom is None or slash.text != "/" or bottom.kind != "num":
            return False
        if not (top.text.isdigit() and bottom.text.isdigit()) or slash.spaced or bottom.spaced:
            return False
        after = self.peek(3)
        return 0 < int(top.text) < int(bottom.text) and not (after is not None and after.text in "^/")

    # factor := atom ("^" exponent)?     (a "^\circ" is a degree sign, left to the caller)
    def factor(self) -> Number:
        base = self.atom()
        hat = self.peek()
        if hat is None or hat.text != "^":
            return base
        after = self.peek(1)
        if after is None or after.text in ("circ", "degree", "prime") or (
                after.text == "{" and (inner := self.peek(2)) is not None and inner.text in ("circ", "degree")):
            return base
        self.take()
        if after.kind == "num":
            return power(base, self._number(self.take()))
        if after.kind == "sym" and after.text in "+-" and (number := self.peek(1)) is not None and number.kind == "num":
            sign = self.take()
            exponent = self._number(self.take())
            return power(base, -exponent if sign.text == "-" else exponent)
        return power(base, self.argument())

    def atom(self) -> Number:
        token = self.peek()
        if token is None:
            raise Unreadable("nothing where a number should be")
        if token.kind == "num":
            return self._number(self.take())
        if token.kind == "sym" and token.text in "({":
            return self.group()
        if token.kind == "cmd" and token.text == "pi":
            self.take()
            return PI
        if token.kind == "cmd" and token.text == "frac":
            self.take()
            self.reach = max(self.reach, self._argument_end(self._argument_end(self.position) + 1))
            top = self.argument()
            bottom = self.argument()
            return arithmetic("/", top, bottom)
        if token.kind == "cmd" and token.text == "sqrt":
            self.take()
            index = 2
            bracket = self.peek()
            indexed = bracket is not None and bracket.text == "["
            end = self._argument_end(self.position)
            self.reach = max(self.reach, self._argument_end(end + 1) if indexed else end)
            if indexed:
                value = self.group()
                if not (isinstance(value, Fraction) and value.denominator == 1):
                    raise Unreadable("a root whose index is not a whole number")
                index = int(value)
            return root(self.argument(), index)
        if token.kind == "cmd" and token.text == "surd":
            roots = 0
            while (token := self.peek()) is not None and token.kind == "cmd" and token.text == "surd":
                self.take()
                roots += 1
            if roots > MAX_NESTING:
                raise Unreadable(f"roots nested more than {MAX_NESTING} deep")
            value = self.atom()
            for _ in range(roots):
                value = root(value, 2)
            return value
        raise Unreadable(f"{token.text!r} where a number should be")

    def argument(self) -> Number:
        """A LaTeX argument: a group, or one character (`\\frac12` is a half)."""
        token = self.peek()
        if token is not None and token.kind == "num" and token.text.isdigit() and len(token.text) > 1:
            # the first digit is the argument; the rest stays for what follows
            self.tokens[self.position] = Token("num", token.text[1:], False)
            return Fraction(int(token.text[0]))
        if token is not None and token.kind == "sym" and token.text == "{":
            return self.group()
        if token is not None and (token.kind == "num" or token.text == "pi"):
            return self.atom()
        raise Unreadable("a LaTeX argument that is not a number")

    def group(self) -> Number:
        opening = self.take()
        close = self.closing.get(self.position - 1)
        self.reach = max(self.reach, len(self.tokens) - 1 if close is None else close)
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise Unreadable(f"brackets nested more than {MAX_NESTING} deep")
        value = self.expression()
        if close is None or self.position != close:
            raise Unreadable(f"more than a number inside {opening.text}…")
        self.take()
        self.depth -= 1
        return value

    @staticmethod
    def _number(token: Token) -> Fraction:
        if len(token.text) <= 18 and token.text.isdigit():
            return Fraction(int(token.text))  # the common case, without the bounds' bookkeeping
        value = exact_number(token.text)
        if value is None:
            raise Unreadable(f"{token.text!r} is not a number")
        return value


# --------------------------------------------------------------------------------------------
# The answer's number
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    value: Number | None
    why: str | None
    percent: bool


def _starts(tokens: list[Token], index: int) -> bool:
    """Whether a number starts at `index` (a sign only before a number, and not as the
    operator after a word: "x+2", "x - 2"; a bracket only before a number, and not after a
    word: "f(2)")."""
    token = tokens[index]
    if token.kind == "num" or (token.kind == "cmd" and token.text in _OPERAND_COMMANDS):
        return True
    if token.text == "(" and index + 1 < len(tokens):
        inside = tokens[index + 1]
        after_word = index > 0 and not token.spaced and tokens[index - 1].kind == "word"
        return not after_word and (inside.kind == "num" or inside.text in _OPERAND_COMMANDS)
    if token.kind != "sym" or token.text not in "+-" or index + 1 >= len(tokens):
        return False
    following = tokens[index + 1]
    if following.spaced or not (following.kind == "num" or following.text in _OPERAND_COMMANDS):
        return False
    before = tokens[index - 1] if index else None
    return before is None or token.spaced or not (before.kind in ("word", "num") or before.text in ")}]")


def _attachment_end(tokens: list[Token], index: int, closing: dict[int, int]) -> int | None:
    """Where the digits that belong to a word end ("x_1", "m^2", "H2O", "10^{-3}" after a unit),
    None when none start at `index`."""
    token = tokens[index]
    if token.kind == "num" and not token.spaced and index and tokens[index - 1].kind == "word":
        return index + 1
    if token.kind != "sym" or token.text not in "^_" or index + 1 >= len(tokens):
        return None
    following = tokens[index + 1]
    if following.text == "{":
        return closing.get(index + 1, len(tokens) - 1) + 1
    if following.text in "+-" and index + 2 < len(tokens):
        return index + 3
    return index + 2


def _percent_after(tokens: list[Token], index: int) -> bool:
    return index < len(tokens) and (tokens[index].text == "%" or tokens[index].text.lower() == "percent")


def _algebra(tokens: list[Token], of_words: list[bool], found: _Found) -> str | None:
    """Why a number is part of an expression with a variable rather than the answer (None: it
    is not). `of_words` tells which tokens are words or belong to one ("x^2")."""
    before = tokens[found.start - 1] if found.start else None
    operators = "+-*/"
    if before is not None and before.text == "(" and not before.spaced and found.start > 1 \
            and tokens[found.start - 2].kind == "word":
        return "the argument of a function"
    function = found.start - 1
    while function >= 0 and of_words[function] and tokens[function].kind != "word":
        function -= 1  # past a subscript or a power ("\log_{2} 8", "\sin^2 30")
    if function >= 0 and tokens[function].kind == "cmd" and tokens[function].text in _VARIABLE_COMMANDS:
        return "the argument of a function, or a number beside a variable"
    if before is not None and (before.text in operators or before.text in _PRODUCTS) and found.start > 1 \
            and (of_words[found.start - 2] or tokens[found.start - 2].text in ")}"):
        return "a number in an expression with a variable"
    after = tokens[found.end] if found.end < len(tokens) else None
    if after is None:
        return None
    if after.kind == "word" and not after.spaced and after.text in _VARIABLE_LETTERS:
        return "the coefficient of a variable"
    if after.kind == "cmd" and after.text in _VARIABLE_COMMANDS:
        return "the coefficient of a variable or a function"
    operand = tokens[found.end + 1] if found.end + 1 < len(tokens) else None
    if (after.text in operators or after.text in _PRODUCTS) and operand is not None and (
            operand.kind == "word" or operand.text in _VARIABLE_COMMANDS):
        return "a number in an expression with a variable"
    return None


def _found_numbers(tokens: list[Token]) -> tuple[list[_Found], list[bool]]:
    """Every number the tokens hold, in order (each read once; the digits of words skipped), and
    which tokens are words or belong to one."""
    parser = _Parser(tokens)
    found: list[_Found] = []
    of_words = [token.kind == "word" for token in tokens]
    index = 0
    brackets_from = 0  # a bracket before this index starts no number (one that did failed around it)
    while index < len(tokens):
        attached = _attachment_end(tokens, index, parser.closing)
        if attached is not None:
            of_words[index:attached] = [True] * (min(attached, len(tokens)) - index)
            index = attached
            continue
        if not _starts(tokens, index) or (tokens[index].text == "(" and index < brackets_from):
            index += 1
            continue
        parser.start(index)
        value: Number | None
        try:
            value, why = parser.expression(), None
            end = parser.position
        except Unreadable as failed:
            if tokens[index].text == "(":  # "(2 kg each)": no number starts at the bracket; one may inside
                index, brackets_from = index + 1, parser.resume()
                continue
            value, why, end = None, str(failed), parser.resume()
        percent = _percent_after(tokens, end)
        found.append(_Found(index, end, value, why, percent))
        index = end + percent
    return found, of_words


def _joined(tokens: list[Token], first: _Found, second: _Found) -> bool:
    """Whether two numbers stand side by side or joined as a list or range ("2 3", "2, 3", "2 or 3")."""
    between = tokens[first.end + first.percent : second.start]
    return all(token.text.lower() in _JOINERS for token in between) and len(between) <= 1


def read_number(text: str, *, whole: bool = False) -> Reading:
    """The number an answer states (module docstring): the last one; with `whole`, the text must
    be that number and nothing else (a "%" allowed), else the reading has no value.
    Unjudgeable (`bounds`) when evaluating it would pass the number bounds."""
    tokens = tokens_of(text)
    found, of_words = _found_numbers(tokens)
    if not found:
        return Reading(None)
    last = found[-1]
    if whole and (len(found) != 1 or last.start != 0 or last.end + last.percent != len(tokens)):
        return Reading(None, unreadable="more than a number")
    why = last.why or _algebra(tokens, of_words, last)
    if why is None and len(found) > 1 and _joined(tokens, found[-2], last):
        why = "more than one number (a list, a range or numbers side by side)"
    if why is not None:
        return Reading(None, last.percent, unreadable=why)
    return Reading(last.value, last.percent)


def _candidates(reading: Reading) -> list[Number]:
    assert reading.value is not None
    if not reading.percent:
        return [reading.value]
    hundredth = arithmetic("/", reading.value, Fraction(100))
    return [reading.value, hundredth]


def same_number(answer: Reading, gold: Reading, tolerance: Fraction) -> bool:
    """Whether the answer's number is the gold one: exact values within `tolerance`; a value
    that is not exact within the larger of `tolerance` and `RELATIVE_TOLERANCE` of the larger
    side. A "%" on either side also lets its value be read as hundredths (50% is 50 and 0.5)."""
    if answer.value is None or gold.value is None:
        return False
    for mine in _candidates(answer):
        for theirs in _candidates(gold):
            if isinstance(mine, Fraction) and isinstance(theirs, Fraction):
                if abs(mine - theirs) <= tolerance:
                    return True
                continue
            a, b = approximate(mine), approximate(theirs)
            allowed = max(approximate(tolerance), CONTEXT.multiply(RELATIVE_TOLERANCE, max(abs(a), abs(b))))
            if abs(CONTEXT.subtract(a, b)) <= allowed:
                return True
    return False


__all__ = ["MAX_NESTING", "RELATIVE_TOLERANCE", "Reading", "read_number", "same_number"]

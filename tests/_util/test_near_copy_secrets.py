"""Near-copies of a key are masked like the key: any run of 12 or more consecutive characters of a
configured secret (the key minus a character, without its prefix, split by an invisible
character), in every output, by every command (`maps view`, `--serve`, `maps score` too)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import unicodedata
import urllib.request
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from maps_autogen._util._redact import (
    _INVISIBLE,
    MASK,
    NEAR_COPY_CHARACTERS,
    StreamRedactor,
    _compile,
    _mask_near_copies,
    _Secrets,
    encodings,
    register_secret,
)
from tests.helpers.common import MAPS, clean_env, run_maps
from tests.helpers.view_fixtures import write_synthetic_eval

KEY = "nc-Q7wLx2Vb9Rk4Tz8Mh3Jd6Pf1Ys5Gc0"  # used by no other test: registering it is harmless
STATE = _compile([KEY])
ZWSP, TAG_A, SOFT_HYPHEN = "\u200b", "\U000e0041", "\u00ad"


def leaked(shown: str, secret: str = KEY) -> bool:
    """Whether 12 consecutive characters of `secret` are in `shown` (invisible characters ignored)."""
    visible = _INVISIBLE.sub("", shown)
    return any(secret[i : i + NEAR_COPY_CHARACTERS] in visible for i in range(len(secret) - NEAR_COPY_CHARACTERS + 1))


def test_near_copies_are_masked() -> None:
    cases = {
        KEY: MASK,
        f"key={KEY[:-1]}.": f"key={MASK}.",  # minus its last character
        f"({KEY[3:]})": f"({MASK})",  # without its prefix
        f"[{KEY[5:17]}]": f"[{MASK}]",  # 12 characters from the middle
        f"<{KEY[:10]}{ZWSP}{KEY[10:]}>": f"<{MASK}>",  # split by a zero-width space
        f"<{SOFT_HYPHEN.join(KEY)}>": f"<{MASK}>",  # a soft hyphen between every character
        f"<{KEY[:8]}{TAG_A}{KEY[8:20]}>": f"<{MASK}>",  # an invisible tag character
        f"{KEY} and {KEY[4:]}": f"{MASK} and {MASK}",
    }
    for text, expected in cases.items():
        assert _mask_near_copies(text, STATE) == expected, repr(text)
    for harmless in (KEY[:11], f"{KEY[:11]} {KEY[11:22]}", "plain prose, nothing like a key", ZWSP + "x"):
        assert _mask_near_copies(harmless, STATE) == harmless


def test_invisible_class_covers_every_format_character() -> None:
    missing = [hex(code) for code in range(sys.maxunicode + 1)
               if unicodedata.category(chr(code)) == "Cf" and not _INVISIBLE.fullmatch(chr(code))]
    assert not missing


_PIECES = st.one_of(
    st.text(alphabet=KEY + " .-" + ZWSP, max_size=20),
    st.builds(lambda i, n: KEY[i : i + n], st.integers(0, len(KEY)), st.integers(1, len(KEY))),
    st.builds(lambda i, n, mark: mark.join(KEY[i : i + n]), st.integers(0, len(KEY)), st.integers(12, len(KEY)),
              st.sampled_from([ZWSP, SOFT_HYPHEN, TAG_A, ZWSP * 3])),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=8))
def test_no_twelve_characters_of_a_key_survive(pieces: list[str]) -> None:
    text = "".join(pieces)
    masked = _mask_near_copies(text, STATE)
    assert not leaked(masked)
    if not leaked(text):
        assert masked == text  # nothing like the key: nothing changes


@settings(max_examples=200, deadline=None)
@given(st.lists(_PIECES, max_size=8), st.lists(st.integers(1, 9), min_size=1, max_size=30))
def test_streamed_pieces_leak_no_twelve_characters(pieces: list[str], sizes: list[int]) -> None:
    register_secret(KEY)
    text = "before " + "".join(pieces) + " after"
    redactor, shown, at, n = StreamRedactor(), [], 0, 0
    while at < len(text):
        size = sizes[n % len(sizes)]
        shown.append(redactor.feed(text[at : at + size]))
        at, n = at + size, n + 1
    shown.append(redactor.flush())
    assert not leaked("".join(shown))


def test_redaction_is_linear_on_adversarial_text() -> None:
    state = _compile(["a" * 40, "ab" * 20])  # secrets made of one repeated block
    started = time.perf_counter()
    assert _mask_near_copies("a" * 400_000, state) == MASK
    assert _mask_near_copies("ab" * 200_000 + "c", state) == MASK + "c"
    _mask_near_copies(("a" * 11 + "b") * 40_000, state)
    # Many short runs of the secrets' characters, the last one reaching the text's end.
    assert _mask_near_copies(("a" * 12 + " ") * 50_000 + "a" * 40, state) == (MASK + " ") * 50_000 + MASK
    assert time.perf_counter() - started < 20  # quadratic work would take hours


def _plant(folder: Path) -> None:
    """Write the key and near-copies into a run's transcript, results and answers, as a
    tampered or older run folder would hold them."""
    transcript = folder / "problems" / "q1" / "transcript.jsonl"
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    records[1]["content"] = f"leak {KEY} then {KEY[:-1]} then {KEY[3:10]}{ZWSP}{KEY[10:]} end"
    transcript.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records))
    lines = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    for line in lines:
        line.update(response=f"answer {KEY[2:]}", extraction=f"{KEY[:-2]}")
    (folder / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    # `maps score` reads a data set's own fields too (a results row declares only its own).
    for line in lines:
        line.update(question=f"q {KEY}", answer="4 kg", question_type="free_form", answer_type="text", precision=None, choices=None)
    (folder / "to_score.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_view_serve_and_score_mask_keys_in_the_files_they_read(tmp_path: Path) -> None:
    eval_dir = tmp_path / "eval-planted"
    write_synthetic_eval(eval_dir, 2)
    _plant(eval_dir)
    env = clean_env(OPENAI_API_KEY=KEY)
    page = run_maps(["view", str(eval_dir), "--out", str(tmp_path / "page.html")], env=env, cwd=tmp_path)
    assert page.returncode == 0, page.stderr
    scored = run_maps(["score", "mathvista", str(eval_dir / "to_score.jsonl"), "--out", str(tmp_path / "scored.jsonl")], env=env, cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    server = subprocess.Popen([*MAPS, "view", str(eval_dir), "--serve"], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        url = server.stdout.readline().strip()  # type: ignore[union-attr]
        assert re.match(r"http://127\.0\.0\.1:\d+/", url), url
        index = urllib.request.urlopen(url, timeout=30).read().decode()
        problem_links = re.findall(r'href="(problems/[^"]+\.html)"', index)
        served_pages = [urllib.request.urlopen(url + link, timeout=30).read().decode() for link in problem_links]
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert problem_links
    outputs = {
        "page": "".join(path.read_text() for path in tmp_path.rglob("*.html")),
        "scored": (tmp_path / "scored.jsonl").read_text(),
        "printed": page.stdout + page.stderr + scored.stdout + scored.stderr,
        "served": index + "".join(served_pages),
    }
    for name, text in outputs.items():
        assert not leaked(text), name
    assert MASK in outputs["page"] and MASK in outputs["served"] and MASK in outputs["scored"]


def _brute_force(text: str, state: _Secrets) -> str:
    """What near-copy masking must give: every 12-character window of the visible text that is a
    piece of a secret, merged, masked with the invisible characters inside (the reference)."""
    visible = [(at, c) for at, c in enumerate(text) if not _INVISIBLE.fullmatch(c)]
    view = "".join(c for _, c in visible)
    spans: list[list[int]] = []
    for start in range(len(view) - NEAR_COPY_CHARACTERS + 1):
        if view[start : start + NEAR_COPY_CHARACTERS] in state.runs:
            end = start + NEAR_COPY_CHARACTERS
            if spans and start <= spans[-1][1]:
                spans[-1][1] = end
            else:
                spans.append([start, end])
    pieces, done = [], 0
    for start, end in spans:
        pieces += [text[done : visible[start][0]], MASK]
        done = visible[end - 1][0] + 1
    return "".join(pieces) + text[done:]


# Secrets of every kind of alphabet: a key's, one with spaces, quotes and newlines (the runs'
# separators), one beyond Latin-1, one with "?" (what a character beyond Latin-1 is read as).
SECRET_SETS = [[KEY], ["correct horse \"battery\"\n staple 42"], ["pässwörd-€-Ωmega-1234"], ["what?is?this?key?9"],
               [KEY, "ab" * 10]]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SECRET_SETS), st.data())
def test_near_copies_are_masked_where_every_window_would_find_them(secrets: list[str], data: st.DataObject) -> None:
    state = _compile(secrets)
    forms = sorted({form for secret in secrets for form in (secret, *encodings(secret))
                    if len(form) >= NEAR_COPY_CHARACTERS})
    secret = data.draw(st.sampled_from(forms))  # the secret as written, URL-encoded or in base64
    pieces = st.one_of(
        st.text(max_size=30),
        st.text(alphabet=secret + " ?é€\n\"" + ZWSP, max_size=30),
        st.builds(lambda i, n: secret[i : i + n], st.integers(0, len(secret)), st.integers(1, len(secret))),
    )
    text = "".join(data.draw(st.lists(pieces, max_size=8)))
    assert _mask_near_copies(text, state) == _brute_force(text, state)


def test_a_secret_inside_a_json_string_is_masked_whole() -> None:
    """Every file we write and every --json line carry text as JSON strings: a secret with quotes,
    backslashes or characters beyond ASCII is written escaped, and is masked as it is written."""
    secrets = ['pw"Zq81/Lm+Np\\tail-7', "clé-secrète-Zq81Lm", "tab\there-and\nnewline-Zq81"]
    state = _compile(secrets)
    for secret in secrets:
        for ensure_ascii in (True, False):
            written = json.dumps({"k": secret}, ensure_ascii=ensure_ascii)
            assert _mask_near_copies(written, state) == f'{{"k": "{MASK}"}}', written

"""Every option of every `maps` command can come from an environment variable MAPS_<COMMAND>_<OPTION>
(never from a `.env` file, which gives keys and endpoints only; never a safety switch, which is
given on the command line only): the command line wins over it, it wins over the default, each
command's --help names it, and a bad value is one line naming the variable. A stray MAPS_VERSION
or MAPS_HELP does nothing."""

from __future__ import annotations

import json
from pathlib import Path

import click

from maps_autogen.cli import ENV_PREFIX, cli
from maps_autogen.cli._shared import SafetySwitch
from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI


def variable(command: str, option: click.Option) -> str:
    return f"{ENV_PREFIX}_{command.upper()}_{(option.name or '').upper()}"


def test_every_option_of_every_command_names_its_variable_in_help() -> None:
    missing = []
    for name, command in cli.commands.items():
        with click.Context(command, info_name=name, parent=click.Context(cli, info_name="maps",
                                                                           auto_envvar_prefix=ENV_PREFIX)) as context:
            text = " ".join(command.get_help(context).split())
        for option in command.params:
            if getattr(option, "hidden", False):  # not offered (maps eval --human exists only to be refused in one line)
                continue
            if isinstance(option, SafetySwitch):  # command line only: its help says so, and names no variable
                assert "Command line only" in text and variable(name, option) not in text
                continue
            if isinstance(option, click.Option) and option.name != "help" and variable(name, option) not in text:
                missing.append(f"maps {name} {option.opts[0]}: {variable(name, option)}")
    assert not missing, missing


def test_variables_set_options_below_the_command_line(tmp_path: Path) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "mathvista", 4)
    with FakeOpenAI(ProblemScript({pid: row["answer"] for pid, row in rows.items()})) as server:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url, MAPS_EVAL_LIMIT="1",
                        MAPS_EVAL_NO_CACHE="1", MAPS_EVAL_DATA=str(data), MAPS_EVAL_RUNS_DIR=str(tmp_path / "runs"),
                        MAPS_EVAL_MAX_TOKENS="300")
        from_variables = run_maps(["eval", "mathvista"], env=env, cwd=tmp_path)
        assert from_variables.returncode == 0, from_variables.stderr
        assert {r.body["max_tokens"] for r in server.received} == {300}
        server.received.clear()
        # the command line wins over the variables; a .env sets no MAPS_* setting (it gives keys
        # and endpoints only), and says so
        (tmp_path / ".env").write_text("MAPS_EVAL_TEMPERATURE=0.5\n")
        overridden = run_maps(["eval", "mathvista", "--max-tokens", "200", "--limit", "2"], env=env, cwd=tmp_path)
        assert overridden.returncode == 0, overridden.stderr
        assert {(r.body["max_tokens"], r.body["temperature"]) for r in server.received} == {(200, 0.0)}
        assert f"note: {tmp_path / '.env'} sets MAPS_EVAL_TEMPERATURE: ignored" in overridden.stderr
    manifests = [json.loads(path.read_text()) for path in (tmp_path / "runs").glob("eval-*/manifest.json")]
    assert [len(manifest["ids"]) for manifest in sorted(manifests, key=lambda m: m["created_at"])] == [1, 2]


def test_a_bad_value_names_its_variable_and_stray_variables_do_nothing(tmp_path: Path) -> None:
    bad = run_maps(["eval", "mathvista"], env=clean_env(MAPS_EVAL_CONCURRENCY="many"), cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    (line,) = [line for line in bad.stderr.splitlines() if line.startswith("Error:")]
    assert "'--concurrency' (from the environment variable MAPS_EVAL_CONCURRENCY)" in line and "'many'" in line
    stray = run_maps(["config"], env=clean_env(MAPS_VERSION="1", MAPS_HELP="1", MAPS_CONFIG_HELP="1"), cwd=tmp_path)
    assert stray.returncode == 0, stray.stderr
    assert stray.stdout.startswith("# The effective configuration")
